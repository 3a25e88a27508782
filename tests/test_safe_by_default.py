"""
Safe by default: a tool that can change the network is a change whatever its definition says, and a
definition cannot open that door through inventory, an nf:// file or manage_agent. Every door is tried
and the nornir worker's own job store is checked: no job reached it.
"""

import json
import stat
import time
import uuid

import pytest
from conftest import Lab, network_jobs, run

pytestmark = pytest.mark.hardening

WORKER = "hermes-worker-1"
CLI = {"service": "nornir", "task": "cli", "workers": "nornir-worker-1"}
CFG = {"service": "nornir", "task": "cfg", "workers": "nornir-worker-1"}
FB = {"type": "object", "properties": {"FB": {"type": "string"}}, "required": ["FB"]}
FB_COMMANDS = {
    "type": "object",
    "properties": {"FB": {"type": "string"}, "commands": {"type": "string"}},
    "required": ["FB", "commands"],
}
SHUTDOWN = ["interface Gi0/1", "shutdown"]
TOOLS = {
    "show_clock": {"input_schema": FB, "norfab": {**CLI, "kwargs": {"commands": ["show clock"]}}},
    # neither says approval: both are changes all the same
    "push_config": {"input_schema": FB, "norfab": {**CFG, "kwargs": {"config": SHUTDOWN}}},
    "clear_any": {"input_schema": FB_COMMANDS, "allow_commands": ["clear .*"], "norfab": CLI},
    # a wide allow-list of show commands stays read-only: what it sends is held to the read-only forms
    "show_any": {"input_schema": FB_COMMANDS, "allow_commands": ["show .*"], "norfab": CLI},
    "lookup": {"norfab": {"service": "inventory_db", "task": "lookup"}},
    "write_db": {"norfab": {"service": "inventory_db", "task": "write"}},
}
# definitions that try to open a door, each with the reason the refusal must give
DOORS = {
    "cfg-no-approval": (
        {"push": {"approval": False, "input_schema": FB, "norfab": {**CFG, "kwargs": {"config": SHUTDOWN}}}},
        "nornir.cfg: it sends configuration to devices",
    ),
    "clear-no-approval": (
        {"clear": {"approval": False, "input_schema": FB_COMMANDS, "allow_commands": ["clear .*"], "norfab": CLI}},
        "allow_commands clear .* admit commands beyond the read-only forms",
    ),
    "reload-no-approval": (
        {"boot": {"approval": False, "input_schema": FB_COMMANDS, "allow_commands": ["reload"], "norfab": CLI}},
        "allow_commands reload admit commands beyond the read-only forms",
    ),
    "fixed-reload": (
        {"boot": {"approval": False, "input_schema": FB, "norfab": {**CLI, "kwargs": {"commands": ["reload"]}}}},
        "norfab.kwargs send 'reload', not a read-only form",
    ),
    "unknown-service": (
        {"poke": {"approval": False, "norfab": {"service": "mystery", "task": "poke"}}},
        "service 'mystery' is not one the read-only list knows",
    ),
    "netbox-write": (
        {"edit": {"approval": False, "norfab": {"service": "netbox", "task": "crud_update"}}},
        "netbox.crud_update: it is not on the read-only list of netbox",
    ),
    "nornir-task": (
        {"code": {"norfab": {"service": "nornir", "task": "task", "kwargs": {"plugin": "nf://plugins/x.py"}}}},
        "nornir.task cannot be a tool",
    ),
    "fixed-template": (
        {"t": {"input_schema": FB, "norfab": {**CLI, "kwargs": {"commands": ["show {{ norfab.client }}"]}}}},
        "only {{ job_data.NAME }} placeholders are allowed",
    ),
    "fixed-ttp": (
        {"t": {"input_schema": FB, "norfab": {**CLI, "kwargs": {"commands": ["show clock"], "run_ttp": "x"}}}},
        "norfab.kwargs.run_ttp cannot be fixed by a definition",
    ),
    # known only once the nornir service lists its tasks: refused all the same, before anything is served
    "not-for-agents": (
        {"status": {"norfab": {"service": "nornir", "task": "get_worker_status"}}},
        "nornir.get_worker_status is not available to agents",
    ),
    "kwargs-typo": (
        {"t": {"input_schema": FB, "norfab": {**CLI, "kwargs": {"comands": ["show clock"]}}}},
        "'comands' is not an argument of the task; did you mean commands?",
    ),
}
# the same doors in files NorFab serves: created from a source, and named by inventory
FILES = {
    f"agents/{name}.yaml": {"instructions": "x", "toolsets": ["norfab"], "tools": tools}
    for name, (tools, _) in DOORS.items()
}
AGENTS = {
    "ops": {"instructions": "You operate the network.", "toolsets": ["norfab"], "tools": TOOLS},
    "guarded": {
        "instructions": "You operate the network.",
        "toolsets": ["norfab"],
        "tools": TOOLS,
        "approvers": ["noc-lead"],
        "approval_timeout": 60,
    },
    "filed-cfg": {"from_yaml_file": "nf://agents/cfg-no-approval.yaml"},
    "filed-hidden": {"from_yaml_file": "nf://agents/not-for-agents.yaml"},
}
LAB = Lab(
    workers={WORKER: AGENTS},
    hosts=("r1",),
    settings={"read_only_tasks": {"inventory_db": ["lookup"]}},
    files=FILES,
)


def agents(nf):
    return {a["name"]: a for a in run(nf.client, "get_agents")["result"]}


def changes_sent(base, before):
    """Jobs the nornir worker received since ``before`` that could change a device."""
    jobs = network_jobs(base)[before:]
    return [(task, kw) for task, kw in jobs if task != "cli" or "show" not in json.dumps(kw.get("commands"))]


def call(nf, agent, tool, arguments):
    tag = uuid.uuid4().hex[:8]
    res = run(
        nf.client, "invoke", job_timeout=90, agent=agent, instructions=f"{tag} CALL {tool} {json.dumps(arguments)}"
    )
    assert not res["failed"], res["errors"]
    [summary] = res["result"]["tool_calls"]
    return summary


def test_get_agents_shows_each_tools_class_and_why(nf):
    tools = agents(nf)["ops"]["tools"]
    assert {name: shown["class"] for name, shown in tools.items()} == {
        "show_clock": "read_only",
        "push_config": "change",
        "clear_any": "change",
        "show_any": "read_only",
        "lookup": "read_only",
        "write_db": "change",
    }
    assert "nornir.cfg: it sends configuration to devices" in tools["push_config"]["reason"]
    assert "inventory lists it under read_only_tasks" in tools["lookup"]["reason"]
    assert "service 'inventory_db'" not in tools["lookup"]["reason"]
    assert "not on the read-only list of inventory_db" in tools["write_db"]["reason"]
    detail = run(nf.client, "get_agent", agent="ops")["result"]["tools"]["clear_any"]
    assert (detail["class"], detail["approval"]) == ("change", None)


@pytest.mark.parametrize("door", sorted(DOORS))
def test_a_door_in_a_definition_is_refused_through_manage_agent_and_its_source_file(lab, door):
    nf, base = lab
    tools, reason = DOORS[door]
    for how in (
        {"definition": {"instructions": "x", "toolsets": ["norfab"], "tools": tools}},
        {"source": f"nf://agents/{door}.yaml"},
    ):
        name = f"door-{uuid.uuid4().hex[:6]}"
        res = run(nf.client, "manage_agent", action="create", agent=name, **how)
        assert res["failed"], (door, how)
        [error] = res["errors"]
        assert reason in error, error
        assert f"tools.{next(iter(tools))}" in error or f"tool '{next(iter(tools))}'" in error, error
        assert "\n" not in error
        assert name not in agents(nf), "a refused definition left an agent"
        assert not list(base.rglob(f"profiles/{name}")), "a refused definition left a profile"


@pytest.mark.parametrize(
    "agent, reason", [("filed-cfg", DOORS["cfg-no-approval"][1]), ("filed-hidden", DOORS["not-for-agents"][1])]
)
def test_a_door_in_an_inventory_definition_leaves_the_agent_unavailable(lab, agent, reason):
    nf, base = lab
    shown = agents(nf)[agent]
    assert (shown["available"], shown["state"]) == (False, "invalid")
    assert reason in shown["error"]
    before = len(network_jobs(base))
    res = run(nf.client, "invoke", agent=agent, instructions='CALL push {"FB": "r1"}')
    assert res["failed"] and reason in res["errors"][0]
    assert network_jobs(base)[before:] == []


def test_a_change_that_never_said_approval_is_asked_and_never_runs_unattended(lab):
    nf, base = lab
    before = len(network_jobs(base))
    for tool, arguments in (("push_config", {"FB": "r1"}), ("clear_any", {"FB": "r1", "commands": "clear counters"})):
        summary = call(nf, "ops", tool, arguments)
        assert (summary["status"], summary["job_uuid"]) == ("refused", None), summary
        assert "approval" in summary["error"], summary
    assert changes_sent(base, before) == [], "a change reached the nornir worker without approval"


def test_a_read_only_tool_sends_only_read_only_forms_whatever_its_allow_list_admits(lab):
    nf, base = lab
    before = len(network_jobs(base))
    refused = call(nf, "ops", "show_any", {"FB": "r1", "commands": "show run | redirect flash:x"})
    assert refused["status"] == "refused" and "is not allowed by this tool" in refused["error"], refused
    assert network_jobs(base)[before:] == []
    sent = call(nf, "ops", "show_any", {"FB": "r1", "commands": "show clock"})
    assert sent["status"] == "completed" and sent["job_uuid"], sent
    assert [kw.get("commands") for _, kw in network_jobs(base)[before:]] == ["show clock"]


def test_the_final_arguments_are_checked_against_the_tasks_own_schema(lab):
    nf, base = lab
    name = f"bare-{uuid.uuid4().hex[:6]}"
    # nornir cfg requires config: neither the definition nor the model gives it
    tools = {"push": {"input_schema": FB, "norfab": CFG}}
    definition = {"instructions": "x", "toolsets": ["norfab"], "tools": tools, "approval_timeout": 0}
    assert not run(nf.client, "manage_agent", action="create", agent=name, definition=definition)["failed"]
    before = len(network_jobs(base))
    summary = call(nf, name, "push", {"FB": "r1"})
    assert summary["status"] == "refused" and "'config' is a required property" in summary["error"], summary
    assert network_jobs(base)[before:] == []
    run(nf.client, "manage_agent", action="delete", agent=name)


def schedule(nf, agent, **kwargs):
    res = run(nf.client, "schedule", agent=agent, **kwargs)
    assert not res["failed"], res["errors"]
    return res["result"]


def scheduled_run(nf, agent, prompt):
    """Create a schedule, run it now, return its run from history once it has ended."""
    name = f"s-{uuid.uuid4().hex[:6]}"
    schedule(nf, agent, action="create", definition={"name": name, "prompt": prompt, "schedule": "every 1h"})
    schedule(nf, agent, action="run", schedule_id=name)
    return name


def history(nf, agent, name, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        runs = schedule(nf, agent, action="history", schedule_id=name)["history"]
        if runs:
            return runs[0]
        time.sleep(0.5)
    raise AssertionError(f"schedule {name} did not run")


def test_a_scheduled_run_of_an_agent_without_approvers_never_reaches_a_change(lab):
    nf, base = lab
    before = len(network_jobs(base))
    name = scheduled_run(nf, "ops", 'CALL push_config {"FB": "r1"}')
    [summary] = history(nf, "ops", name)["tool_calls"]
    assert (summary["status"], summary["job_uuid"]) == ("refused", None), summary
    assert "a scheduled run reaches a change only through the approval inbox with a named approver" in summary["error"]
    assert changes_sent(base, before) == []
    schedule(nf, "ops", action="remove", schedule_id=name)


def test_a_scheduled_run_of_an_agent_with_approvers_parks_in_the_inbox(lab):
    nf, base = lab
    before = len(network_jobs(base))
    name = scheduled_run(nf, "guarded", 'CALL push_config {"FB": "r1"}')
    deadline = time.time() + 60
    while time.time() < deadline:
        pending = [a for a in run(nf.client, "get_approvals", agent="guarded")["result"] if a["state"] == "pending"]
        if pending:
            break
        time.sleep(0.5)
    [approval] = pending
    assert (approval["tool"], approval["approvers"]) == ("push_config", ["noc-lead"])
    assert changes_sent(base, before) == [], "the change ran before anyone approved it"
    res = run(nf.client, "deny", approval_id=approval["approval_id"], note="not tonight")
    assert res["failed"], "a client that is not noc-lead decided the approval"
    lead = nf.make_client(name="noc-lead")
    try:
        assert not run(lead, "deny", approval_id=approval["approval_id"], note="not tonight")["failed"]
    finally:
        lead.destroy()
    [summary] = history(nf, "guarded", name)["tool_calls"]
    assert summary["status"] == "refused" and "noc-lead denied this call" in summary["error"], summary
    assert changes_sent(base, before) == []
    schedule(nf, "guarded", action="remove", schedule_id=name)


def test_every_file_and_folder_the_worker_makes_is_its_users_alone(lab):
    nf, base = lab
    call(nf, "ops", "show_clock", {"FB": "r1"})  # records, evidence, sessions written
    [root] = [p for p in base.rglob("hermes") if (p / "profiles").is_dir()]
    loose = [
        f"{p.relative_to(root)} {oct(p.stat().st_mode & 0o777)}"
        for p in (root, *root.rglob("*"))
        if not p.is_symlink() and p.stat().st_mode & 0o777 != (0o700 if p.is_dir() else 0o600)
    ]
    assert loose == []
    assert stat.S_IMODE(root.stat().st_mode) == 0o700
