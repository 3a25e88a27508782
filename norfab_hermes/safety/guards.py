"""
What a model may never make a NorFab task do, and why.

Model arguments are hostile input. NorFab tasks validate their arguments but
pass on unknown ones, render strings holding Jinja2 syntax with the worker's
NorFab client in scope, fetch ``nf://`` and ``git://`` strings from the
NorFab base directory (inventories with device passwords, keys, job
databases), and split commands at more characters than a newline. The tool
runner therefore sends exactly the arguments a tool declares, never the ones
named here, and refuses values that would render, fetch or add lines.

Pure data and checks: imported by ``models`` (tool definitions) and by the
worker's tool runner. Sources: norfab 0.25 and nornir-salt 0.23 (see
``docs/safety.md``).
"""

import re
from typing import Any, Dict, Iterator, List, Optional, Tuple

# Services whose every task is out of bounds for a model.
FORBIDDEN_SERVICES = {
    "hermes": "agents do not call agents except through bounded delegation",
    "agent": "agents do not call other agent services",
    "filesharing": "it reads any file under the NorFab base directory",
    "workflow": "a workflow runs any task with any arguments, past every tool guard",
    "fastapi": "it administers the REST API and its bearer tokens",
    "fastmcp": "it administers the MCP server and its bearer tokens",
}
# Tasks of any service that administer workers or hand out their data.
FORBIDDEN_TASKS = {
    "run_shell_cmd": "it runs shell commands on the worker host",
    "get_inventory": "it returns inventories with credentials",
    "runtime_inventory": "it returns and changes inventories with credentials",
    "get_logs": "it returns worker logs",
    "job_details": "it returns other jobs' arguments and results",
    "job_list": "it lists other clients' jobs",
    "delete_fetched_files": "it deletes files on the worker",
    "get_watchdog_configuration": "it administers the worker",
    "bearer_token_store": "it mints API tokens",
    "bearer_token_list": "it lists API tokens",
    "bearer_token_delete": "it revokes API tokens",
    "bearer_token_check": "it probes API tokens",
}
# Single tasks that run code or move files whatever their arguments.
FORBIDDEN_TARGETS = {
    ("nornir", "task"): "its plugin argument names Python code for the worker to run",
    ("nornir", "file_copy"): "it uploads any NorFab file (inventories, keys) to a device",
    ("netbox", "design_deploy"): "it runs design code with the worker's NetBox client",
    ("netbox", "sync_device_inventory"): "it evaluates expressions and runs parsing templates",
}

# Arguments no model may set, on any task (compared with '-' and '_' alike).
GUARDED_ARGUMENTS = {
    "run_ttp": "a TTP template: its <macro> runs Python on the worker",
    "ttp_template": "a TTP template: its <macro> runs Python on the worker",
    "use_ttp": "parses with a TTP template, which can run Python on the worker",
    "dp": "a data processor chain, TTP parsing included",
    "tests": "test suites run eval and custom Python functions",
    "suite": "test suites run eval and custom Python functions and are read from files",
    "function_file": "a Python file run on the worker",
    "function_import": "a Python function imported on the worker",
    "template": "a TTP, TextFSM or Jinja2 template read or run on the worker",
    "textfsm_template": "a template file read on the worker",
    "use_textfsm": "parses with a template file read on the worker",
    "tf": "writes a file on the worker, at any path",
    "diff": "reads other jobs' saved results on the worker",
    "diff_last": "reads other jobs' saved results on the worker",
    "job_data": "a string is a file fetched from the NorFab base directory",
    "fo": "attribute filters reveal inventory passwords one character at a time",
    "run_creds_retry": "sends inventory credentials to any host and writes session logs",
    "new_line_char": "splits a command into several, past command checks",
    "split_lines": "changes how commands are split, past command checks",
    "use_ps": "sends raw input to the device, answering its confirmation prompts",
    "source_file": "uploads any NorFab file to a device",
    "edit_rpc": "calls any method of the NETCONF client",
    "eval_expression": "evaluates an expression on the worker",
    "inventory_transform": "runs a transformation function on the worker",
    "name_template": "a Jinja2 template rendered with the worker's clients",
    "plugin_file": "a Python file run on the worker",
}

# NorFab renders argument values holding these as Jinja2 templates, with the
# worker's NorFab client in the context: template syntax runs code there.
TEMPLATE_MARKERS = ("{{", "{%", "{#")
FILE_URL_RE = re.compile(r"(nf|git)://", re.I)
# every character str.splitlines() splits at, plus nornir's own line marker
LINE_BREAK_RE = re.compile(r"[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]|_br_")


def normal(name: str) -> str:
    return name.replace("-", "_").lower()


def guarded_argument(name: str) -> Optional[str]:
    """Why a model may not set argument ``name``; None if it may."""
    return GUARDED_ARGUMENTS.get(normal(name))


def forbidden_target(service: str, task: str) -> Optional[str]:
    """Why ``service.task`` can never be a tool; None if it can."""
    if service in FORBIDDEN_SERVICES:
        return f"service '{service}' cannot be a tool: {FORBIDDEN_SERVICES[service]}"
    if task in FORBIDDEN_TASKS:
        return f"task '{task}' cannot be a tool: {FORBIDDEN_TASKS[task]}"
    if (service, task) in FORBIDDEN_TARGETS:
        return f"{service}.{task} cannot be a tool: {FORBIDDEN_TARGETS[(service, task)]}"
    return None


def strings_in(value: Any, path: str = "") -> Iterator[Tuple[str, str]]:
    """(path, text) of every string in a JSON-like value."""
    if isinstance(value, str):
        yield path or "value", value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from strings_in(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from strings_in(item, f"{path}[{index}]")


def refused_names(arguments: Any) -> List[str]:
    """Guarded argument names, at any depth of a model's arguments, with the reason."""
    found: List[str] = []
    if isinstance(arguments, dict):
        for key, item in arguments.items():
            if guarded_argument(str(key)):
                found.append(f"'{key}' ({guarded_argument(str(key))})")
            found += refused_names(item)
    elif isinstance(arguments, list):
        for item in arguments:
            found += refused_names(item)
    return found


def check_values(arguments: Dict[str, Any], allow_files: bool = False, allow_multiline: bool = False) -> None:
    """Raise ValueError, naming the argument, for a value that would render, fetch or add lines."""
    for path, text in strings_in(arguments):
        if any(marker in text for marker in TEMPLATE_MARKERS):
            raise ValueError(
                f"argument {path} contains template syntax ({{{{, {{% or {{#), which is not allowed; send plain values"
            )
        if not allow_files and FILE_URL_RE.search(text):
            raise ValueError(f"argument {path} names a NorFab file (nf:// or git://), which this tool does not allow")
        if not allow_multiline and LINE_BREAK_RE.search(text):
            raise ValueError(f"argument {path} must be a single line (line breaks add commands)")
