"""
Which tools can change the network: every NorFab tool is read-only, a change or forbidden, and says why.

A tool is read-only only when its task is on the shipped list below (or the
hermes worker's inventory lists it under ``read_only_tasks``) and, for a task
whose arguments reach a device as commands, when every command it can send is
a read-only form. Every other task, a task of a service the list does not
know included, is a change: it runs inside the change envelope (approval,
exact devices, lock, digest, unknown-outcome markers). A definition cannot
make a change read-only (``approval: false``); it can make a read-only tool
ask (``approval: true``). Forbidden: the guards' targets, and fixed arguments
that run code or templates on the network worker.

Pure data and checks: imported by ``models`` (tool definitions) and by the
worker's tools.
"""

import re
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Mapping, Optional

from . import commands, guards

READ_ONLY, CHANGE, FORBIDDEN = "read_only", "change", "forbidden"

# Tasks every NorFab worker has (norfab.core.worker) that read and change nothing and are open to
# agents (NorFab marks its other read-only base tasks not for agents).
BASE_READ_ONLY = {"echo": "it returns its own arguments", "get_version": "it reads software versions"}
DEVICE_READS = "it reads device state"
NETBOX_READS = "it reads NetBox"
# The read-only tasks of NorFab 0.25's services, by service. A task not here is a change.
READ_ONLY_TASKS: Dict[str, Dict[str, str]] = {
    "nornir": {
        "cli": "it sends show commands and reads their output (read-only while every command is a read-only form)",
        "network": "it pings or resolves names from the nornir worker",
        "get_nornir_hosts": "it lists device names",
        "get_watchdog_connections": "it reads the worker's device connections",
        "errdisabled_hosts_list": "it lists devices the worker stopped talking to",
        "parse_napalm": DEVICE_READS,
        "parse_textfsm": DEVICE_READS,
        "parse_ttp": DEVICE_READS,
        **{
            task: DEVICE_READS
            for task in ("netconf_get", "netconf_get_config", "netconf_get_schema", "netconf_get_capabilities")
        },
        **{
            f"snmp_{verb}": DEVICE_READS
            for verb in ("get", "getnext", "multiget", "walk", "multiwalk", "bulkget", "bulkwalk", "table", "bulktable")
        },
    },
    "netbox": {
        task: NETBOX_READS
        for task in (
            "get_devices",
            "get_interfaces",
            "get_connections",
            "get_circuits",
            "get_bgp_peerings",
            "get_topology",
            "crud_list_objects",
            "crud_search",
            "crud_read",
            "crud_get_changelogs",
            "check_device_sync",
            "get_netbox_status",
            "get_compatibility",
            "graphql",
            "netbox_graphql",
            "cache_list",
            "cache_get",
        )
    },
    "containerlab": {task: "it reads lab state" for task in ("get_containerlab_status", "get_running_labs", "inspect")},
    "fakenos": {"inspect_networks": "it reads lab state"},
}
# Why some well-known tasks are changes (the rest: not on the read-only list).
KNOWN_CHANGES = {
    ("nornir", "cfg"): "it sends configuration to devices",
    ("nornir", "netconf_edit_config"): "it edits device configuration",
    ("nornir", "netconf_commit"): "it commits device configuration",
    ("nornir", "snmp_set"): "it sets device values over SNMP",
    ("nornir", "snmp_multiset"): "it sets device values over SNMP",
    ("netbox", "rest"): "it sends any REST request to NetBox, writes included",
}
# Tasks whose arguments reach a device as commands: read-only only with read-only commands.
COMMAND_TASKS = {("nornir", "cli")}

# Fixed arguments no definition may set: they run code or templates on the network worker,
# or read and write its files (the model is refused them too, see guards).
CODE_ARGUMENTS = {
    name: reason
    for name, reason in guards.GUARDED_ARGUMENTS.items()
    if name not in ("job_data", "fo", "diff", "diff_last")  # data, filters, saved results: no code
}
# The only template syntax a fixed argument may hold: a value of the call's job_data spliced in.
JOB_DATA_PLACEHOLDER = re.compile(r"\{\{\s*job_data\.[A-Za-z_][A-Za-z0-9_]*\s*\}\}")
PLACEHOLDER_STAND_IN = "x"
READ_ONLY_VERB = re.compile(r"\^?(sh|sho|show|dis|disp|display|ping|traceroute)(\\s|\s|\$|\Z)", re.I)
READ_ONLY_FORMS = commands.compile_commands(list(commands.READ_ONLY_COMMANDS))


@dataclass(frozen=True)
class ToolClass:
    """What a tool can do to the network, and why the code says so."""

    kind: str  # read_only, change or forbidden
    reason: str

    @property
    def changes(self) -> bool:
        return self.kind == CHANGE

    def shown(self) -> Dict[str, str]:
        return {"class": self.kind, "reason": self.reason}


def classify(
    service: str,
    task: str,
    kwargs: Mapping[str, Any],
    allow_commands: Optional[List[str]],
    read_only_tasks: Optional[Mapping[str, Iterable[str]]] = None,
) -> ToolClass:
    """The class of a NorFab tool on ``service.task`` with fixed ``kwargs``; ``read_only_tasks`` are the
    worker inventory's additions to the shipped list."""
    where = f"{service}.{task}"
    forbidden = guards.forbidden_target(service, task) or fixed_code(kwargs)
    if forbidden:
        return ToolClass(FORBIDDEN, forbidden)
    reason = read_only_reason(service, task, read_only_tasks)
    if reason is None:
        why = KNOWN_CHANGES.get((service, task))
        if why is None and service not in READ_ONLY_TASKS and service not in (read_only_tasks or {}):
            why = f"service '{service}' is not one the read-only list knows (the worker's inventory may list its read-only tasks under read_only_tasks)"
        return ToolClass(
            CHANGE, f"{where}: {why or f'it is not on the read-only list of {service}, so it may change state'}"
        )
    if (service, task) in COMMAND_TASKS or commands.command_arguments(kwargs):
        beyond = [p for p in allow_commands or [] if not read_only_pattern(p)]
        if beyond:
            return ToolClass(
                CHANGE,
                f"{where}: allow_commands {', '.join(beyond)} admit commands beyond the read-only forms "
                "(a read-only pattern starts with show, display, ping or traceroute and a space)",
            )
        sent = [c for c in fixed_commands(kwargs) if not read_only_command(c)]
        if sent:
            return ToolClass(CHANGE, f"{where}: norfab.kwargs send '{sent[0]}', not a read-only form")
    return ToolClass(READ_ONLY, f"{where}: {reason}")


def read_only_reason(service: str, task: str, extra: Optional[Mapping[str, Iterable[str]]] = None) -> Optional[str]:
    """Why ``service.task`` is a read-only task, or None when it is not known to be one."""
    if task in BASE_READ_ONLY:
        return BASE_READ_ONLY[task]
    if task in READ_ONLY_TASKS.get(service, {}):
        return READ_ONLY_TASKS[service][task]
    if extra and task in (extra.get(service) or ()):
        return "the worker's inventory lists it under read_only_tasks"
    return None


def check_read_only_tasks(extra: Mapping[str, List[str]]) -> None:
    """ValueError for an inventory addition that is forbidden or known to change state."""
    for service, tasks in extra.items():
        for task in tasks:
            reason = guards.forbidden_target(service, task)
            if reason or (service, task) in KNOWN_CHANGES or (service, task) in COMMAND_TASKS:
                why = reason or KNOWN_CHANGES.get((service, task)) or "its commands are classified call by call"
                raise ValueError(f"read_only_tasks: {service}.{task} cannot be listed: {why}")


def fixed_code(kwargs: Mapping[str, Any]) -> Optional[str]:
    """Why fixed arguments would run code or templates on the network worker, or None."""
    for name in kwargs:
        reason = CODE_ARGUMENTS.get(guards.normal(str(name)))
        if reason:
            return f"norfab.kwargs.{name} cannot be fixed by a definition: {reason}"
    for path, text in guards.strings_in(dict(kwargs)):
        rest = JOB_DATA_PLACEHOLDER.sub(PLACEHOLDER_STAND_IN, text)
        if any(marker in rest for marker in guards.TEMPLATE_MARKERS):
            return (
                f"norfab.kwargs.{path} holds template syntax, which NorFab renders with the worker's "
                "client in scope: only {{ job_data.NAME }} placeholders are allowed"
            )
    return None


def fixed_commands(kwargs: Mapping[str, Any]) -> List[str]:
    """Every command line the fixed arguments send, placeholders standing for their values."""
    lines = []
    for name in commands.command_arguments(kwargs):
        for _, text in guards.strings_in(kwargs[name]):
            # nornir splits at its own line marker too: every piece is a command
            text = JOB_DATA_PLACEHOLDER.sub(PLACEHOLDER_STAND_IN, text)
            lines += guards.LINE_BREAK_RE.split(text)
    return lines


def read_only_command(command: str) -> bool:
    return any(form.fullmatch(" ".join(command.split())) for form in READ_ONLY_FORMS)


def read_only_pattern(pattern: str) -> bool:
    """An allow_commands pattern every match of which starts with a read-only verb: a literal verb first,
    and no alternative at the top level. Calls of read-only tools are checked against the read-only
    forms too, so this decides the class, never what is sent."""
    return bool(READ_ONLY_VERB.match(pattern)) and not top_level_alternative(pattern)


def top_level_alternative(pattern: str) -> bool:
    depth, escaped, in_class = 0, False, False
    for char in pattern:
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "|" and depth == 0:
            return True
    return False
