"""
Changes inside the safety envelope, end to end: scripted model -> Hermes ->
change tool -> nornir / workflow workers -> FakeNOS switches whose state
changes (tests/devices/switch.py), each case checked on the switches
themselves (their configuration log and interfaces) and on the network
workers' job stores.
"""

import json
import re
import sqlite3
import threading
import time
import zlib
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
import test_shell
from conftest import eventually, hermes_worker, network, norfab, result_of, run
from test_shell import nfcli

WORKER = "hermes-worker-1"
SWITCH = (Path(__file__).parent / "devices" / "switch.py").read_text()
PORT = {
    "type": "object",
    "properties": {
        "FB": {"type": "string", "pattern": "^sw[0-9]$"},
        "port": {"type": "string", "enum": ["GigabitEthernet0/1", "GigabitEthernet0/2", "GigabitEthernet0/3"]},
    },
    "required": ["FB", "port"],
}
PORT_STATE = {
    "input_schema": PORT,
    "norfab": {
        "service": "nornir",
        "task": "cli",
        "workers": "all",
        "kwargs": {"commands": ["{% raw %}show interfaces {{ job_data.port }}{% endraw %}"]},
        "job_data": ["port"],
    },
}
ENABLE_PORT = {
    "description": "Bring a port up (no shutdown); the operator approves every call",
    "approval": True,
    "input_schema": PORT,
    "norfab": {
        "service": "nornir",
        "task": "cfg",
        "workers": "all",
        "kwargs": {"config": ["{% raw %}interface {{ job_data.port }}{% endraw %}", "no shutdown"]},
        "job_data": ["port"],
    },
    "preview": {"dry_run": True},
    "verify": {
        "tool": "port_state",
        "arguments": ["FB", "port"],
        "expect": {"contains": ["${port} is up, line protocol is up"]},
    },
    "rollback": {"commands": ["interface ${port}", "shutdown"], "approval": False},
}
WORKFLOW = """\
name: bring-up
description: check a port, bring it up, check it again
before:
  service: nornir
  task: cli
  workers: all
  kwargs: {FB: "${switch}", commands: ["show interfaces ${port}"]}
bring_up:
  service: nornir
  task: cfg
  workers: all
  kwargs: {FB: "${switch}", config: ["interface ${port}", "no shutdown"]}
after:
  service: nornir
  task: cli
  workers: all
  kwargs: {FB: "${switch}", commands: ["show interfaces ${port}"]}
"""
BRING_UP = {
    "description": "Bring a port into service with the reviewed workflow",
    "file": "nf://workflows/bring-up.yaml",
    "input_schema": {
        "type": "object",
        "properties": {"switch": {"type": "string", "pattern": "^sw[0-9]$"}, "port": PORT["properties"]["port"]},
        "required": ["switch", "port"],
    },
    "allow_commands": ["show interfaces \\S+", "interface \\S+", "no shutdown"],
    "timeout": 60,
}


LEAD = "change-lead"  # the NorFab client that alone decides the reviewed workflow's changes


def tomorrow_window() -> str:
    """A window that is closed now: one minute after midnight, tomorrow."""
    day = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")[(datetime.now(timezone.utc) + timedelta(days=1)).weekday()]
    return f"{day} 00:00-00:01"


def agent(tools, **settings):
    return {"instructions": "You change ports.", "toolsets": ["norfab"], "run_timeout": 120, "tools": tools, **settings}


AGENTS = {
    "ops": agent({"port_state": PORT_STATE, "enable_port": ENABLE_PORT}, workflows={"bring_up": BRING_UP}),
    "fixer": agent({"port_state": PORT_STATE, "enable_port": ENABLE_PORT}, approval_timeout=60),
    "impatient": agent({"port_state": PORT_STATE, "enable_port": ENABLE_PORT}, changes={"lock_wait": 1}),
    "fragile": agent({"port_state": PORT_STATE, "enable_port": ENABLE_PORT}, changes={"breaker_after": 2}),
    "guarded": agent({"port_state": PORT_STATE, "enable_port": ENABLE_PORT}, approvers=[LEAD]),
    "nightly": agent({"port_state": PORT_STATE, "enable_port": ENABLE_PORT}, changes={"windows": [tomorrow_window()]}),
    "loose": agent(
        {
            "port_state": PORT_STATE,
            "enable_port": {
                **ENABLE_PORT,
                "input_schema": {
                    "type": "object",
                    "properties": {"FB": {"type": "string"}, "FC": {"type": "string"}, "port": {"type": "string"}},
                },
            },
        },
        workflows={
            "bring_up": {
                **BRING_UP,
                "input_schema": {
                    "type": "object",
                    "properties": {"switch": {"type": "string"}, "port": {"type": "string"}},
                },
            }
        },
    ),
    "hasty": agent(
        {"port_state": PORT_STATE, "enable_port": {**ENABLE_PORT, "norfab": {**ENABLE_PORT["norfab"], "timeout": 3}}}
    ),
    "reviewed": agent(
        {"port_state": PORT_STATE},
        workflows={"bring_up": {**BRING_UP, "preview": {"dry_run": True}, "approvers": [LEAD]}},
        approval_timeout=60,
    ),
    "pinned": agent(
        {"port_state": PORT_STATE},
        workflows={
            "bring_up": {**BRING_UP, "sha256": "0" * 64},
            "reckless": {**BRING_UP, "allow_commands": ["show .*"]},
        },
    ),
}
HOSTS = ["sw1", "sw2", "sw3", "sw4", "sw5", "sw6", "sw7"]


def switch(host):
    return {"name": f"lab_{host}", "python": SWITCH.replace('NAME = "lab_switch"', f'NAME = "lab_{host}"')}


@pytest.fixture(scope="module")
def lab(model, tmp_path_factory):
    workers, files = network(
        HOSTS, models={host: switch(host) for host in HOSTS}, users={WORKER: hermes_worker(model.base_url, AGENTS)}
    )
    workers["workflow-worker-1"] = {"service": "workflow"}
    files["workflows/bring-up.yaml"] = WORKFLOW
    base = tmp_path_factory.mktemp("nf")
    with norfab(base, workers, files) as nf:
        yield nf, base


app = test_shell.app  # nfcli's shell with the hermes plugin mounted, over this module's nf


def jobs(base, worker="nornir-worker-1", clients=("hermes-worker-1", "workflow-worker-1")):
    """(uuid, task, kwargs) of the jobs a network worker received from the agents' side (``clients``), in order."""
    with sqlite3.connect(base / f"__norfab__/files/worker/{worker}/{worker}.db") as db:
        rows = db.execute("SELECT uuid, task, kwargs, client_address FROM jobs ORDER BY rowid").fetchall()
    found = []
    for uuid, task, blob, client in rows:
        if client.startswith(clients):
            try:
                kwargs = json.loads(zlib.decompress(blob))
            except zlib.error:
                kwargs = json.loads(blob)
            found.append((uuid, task, kwargs.get("kwargs") or {}))
    return found


def job_finished(base, uuid, worker="nornir-worker-1"):
    """Whether the network worker finished job ``uuid``: read the device only then, as a command
    sent while a change runs shares the change's session to the device and can cut into it."""
    with sqlite3.connect(base / f"__norfab__/files/worker/{worker}/{worker}.db") as db:
        [(status,)] = db.execute("SELECT status FROM jobs WHERE uuid = ?", (uuid,)).fetchall()
    return status in ("COMPLETED", "FAILED")


def changes_to(base, host, **clients):
    """The configuration jobs (not dry runs) sent to ``host``."""
    return [j for j in jobs(base, **clients) if j[1] == "cfg" and j[2].get("FB") == host and not j[2].get("dry_run")]


def device(nf, host, *commands):
    """What the switch prints; read again when nornir answers empty (jobs overlapping on one nornir worker)."""
    for _ in range(5):
        reply = nf.client.run_job(
            "nornir", "cli", kwargs={"FB": host, "commands": list(commands)}, workers="all", timeout=60
        )
        result = (reply["nornir-worker-1"]["result"] or {}).get(host)
        if result:
            return result
        time.sleep(1)
    raise AssertionError(f"{host} did not answer {commands}: {reply}")


def device_log(nf, host):
    return device(nf, host, "show lab log")["show lab log"].splitlines()


def invoke(nf, agent_name, instructions, answer=None, hold=None, seen=None, **kwargs):
    """An invoke; an interactive one answers each question with ``answer(question)``, after ``hold`` is set.
    Its job events' messages are added to ``seen`` as they come."""
    interactive = answer is not None
    future = nf.client.submit_job(
        "hermes",
        "invoke",
        kwargs={"agent": agent_name, "instructions": instructions, "interactive": interactive, **kwargs},
        workers=WORKER,
        timeout=150,
    )
    asked = []
    for event in future.events(timeout=150):
        if seen is not None:
            seen.append(event.get("message") or "")
        request = (event.get("extras") or {}).get("input_request")
        if event.get("event_type") == "input_request" and request:
            asked.append(request)
            if hold is not None:
                hold.wait(60)
            future.send_response(input_id=request["id"], value=answer(request), worker=WORKER)
    return result_of(future, WORKER, timeout=60)["result"], asked


def call(tool, **arguments):
    return f"CALL {tool} {json.dumps(arguments)}"


def test_the_approval_shows_the_dry_run_and_a_declined_change_touches_nothing(lab):
    nf, base = lab
    result, [asked] = invoke(
        nf, "ops", call("enable_port", FB="sw1", port="GigabitEthernet0/3"), answer=lambda q: False
    )
    question = asked["question"]
    # what the device would receive, per device, before the question itself
    assert "  sw1:\n  | interface GigabitEthernet0/3\n  | no shutdown\n" in question
    assert question.rstrip().endswith("Allow?")
    shown = asked["metadata"]["approval"]
    assert shown["preview"] == {"sw1": "interface GigabitEthernet0/3\nno shutdown"}
    assert shown["devices"] == ["sw1"] and shown["digest"] in question
    [summary] = result["tool_calls"]
    assert summary["status"] == "refused" and "declined" in summary["error"]
    assert summary["change"]["digest"] == shown["digest"]
    # the dry run reached the nornir worker; no change did, and the switch took none
    dry = [j for j in jobs(base) if j[1] == "cfg" and j[2].get("FB") == "sw1"]
    assert dry and all(j[2]["dry_run"] is True for j in dry)
    assert device_log(nf, "sw1") == ["(no changes)"]


def test_the_inbox_approval_carries_the_preview_and_its_digest_is_what_runs(lab):
    nf, base = lab
    started = run(
        nf.client,
        "start_run",
        worker=WORKER,
        agent="fixer",
        instructions=call("enable_port", FB="sw2", port="GigabitEthernet0/1"),
    )
    run_id = started["result"]["run_id"]
    deadline = time.time() + 60
    pending = []
    while not pending and time.time() < deadline:
        pending = run(nf.client, "get_approvals", worker=WORKER, agent="fixer")["result"]
        time.sleep(0.3)
    [approval] = pending
    assert approval["devices"] == ["sw2"]
    assert approval["preview"] == {"sw2": "interface GigabitEthernet0/1\nno shutdown"}
    assert not changes_to(base, "sw2"), "nothing is changed while the approval waits"
    run(nf.client, "approve", worker=WORKER, approval_id=approval["approval_id"], note="checked the preview")
    while time.time() < deadline:
        state = run(nf.client, "get_run", worker=WORKER, agent="fixer", run_id=run_id)["result"]
        if state["state"] == "finished":
            break
        time.sleep(0.3)
    [summary] = state["result"]["tool_calls"]
    assert summary["change"]["digest"] == approval["change_digest"]
    assert summary["change"]["outcome"] == "verified" and summary["status"] == "completed"
    [change] = changes_to(base, "sw2")
    assert change[0] == summary["job_uuid"]
    assert device_log(nf, "sw2") == ["1 configure", "2 no shutdown GigabitEthernet0/1", "3 end"]


def test_a_failed_verification_rolls_back_and_the_device_ends_as_before(lab):
    nf, base = lab
    before = device(nf, "sw3", "show interfaces GigabitEthernet0/2")
    result, _ = invoke(nf, "ops", call("enable_port", FB="sw3", port="GigabitEthernet0/2"), answer=lambda q: True)
    [summary] = result["tool_calls"]
    record = summary["change"]
    assert summary["status"] == "failed" and "verification failed" in summary["error"]
    assert record["outcome"] == "rolled_back"
    assert record["verify"]["problems"] == ["sw3 does not show 'GigabitEthernet0/2 is up, line protocol is up'"]
    assert record["rollback"]["state"] == "done" and record["rollback"]["check"]["passed"] is True
    # the switch took the change and its rollback, and shows what it showed before
    assert device_log(nf, "sw3") == [
        "1 configure",
        "2 no shutdown GigabitEthernet0/2",
        "3 end",
        "4 configure",
        "5 shutdown GigabitEthernet0/2",
        "6 end",
    ]
    assert device(nf, "sw3", "show interfaces GigabitEthernet0/2") == before
    change, rollback = changes_to(base, "sw3")
    assert change[0] == summary["job_uuid"] and rollback[0] == record["rollback"]["job_uuid"]
    assert rollback[2]["config"] == ["interface GigabitEthernet0/2", "shutdown"]


def test_failed_verifications_open_the_breaker_until_an_operator_resets_it(lab):
    nf, base = lab
    for _ in range(2):
        result, _ = invoke(
            nf, "fragile", call("enable_port", FB="sw4", port="GigabitEthernet0/2"), answer=lambda q: True
        )
        assert result["tool_calls"][0]["change"]["outcome"] == "rolled_back"
    assert any("verifications of agent 'fragile' failed in a row" in w for w in result["warnings"])
    sent = len(jobs(base))
    result, asked = invoke(
        nf, "fragile", call("enable_port", FB="sw4", port="GigabitEthernet0/1"), answer=lambda q: True
    )
    [summary] = result["tool_calls"]
    assert summary["status"] == "refused" and "changes of agent 'fragile' are stopped" in summary["error"]
    assert not asked and len(jobs(base)) == sent, "a stopped agent sends nothing, not even a preview"
    [breaker] = run(nf.client, "get_status", worker=WORKER, agent="fragile")["result"]["changes"]["breakers"]
    assert breaker["open"] is True and breaker["failures"] == 2
    reset = run(nf.client, "reset_breaker", worker=WORKER, agent="fragile", note="cable fixed")["result"]
    assert reset["open"] is False and reset["note"] == "cable fixed"
    result, _ = invoke(nf, "fragile", call("enable_port", FB="sw4", port="GigabitEthernet0/1"), answer=lambda q: True)
    assert result["tool_calls"][0]["change"]["outcome"] == "verified"


def test_only_an_agents_approvers_reset_its_breaker(lab):
    nf, _ = lab
    refused = run(nf.client, "reset_breaker", worker=WORKER, agent="guarded", note="mine")
    assert (
        refused["failed"]
        and f"client '{nf.client.name}' may not reset the change breaker of agent 'guarded'" in (refused["errors"][0])
    )
    entries = run(nf.client, "get_audit", worker=WORKER, kind="approval.refused", agent="guarded")["result"]["entries"]
    assert [(e["actor"], e["data"]["what"]) for e in entries] == [(nf.client.name, "reset the change breaker")]
    lead = nf.make_client(name=LEAD)
    try:  # past the approvers, the lead meets the breaker itself: closed, nothing to reset
        reply = run(lead, "reset_breaker", worker=WORKER, agent="guarded")
    finally:
        lead.destroy()
    assert reply["failed"] and "the breaker of agent 'guarded' is closed" in reply["errors"][0]


def in_background(function, *args, **kwargs):
    """Run ``function`` on a thread; returns the thread and a dict that gets its result."""
    box = {}
    thread = threading.Thread(target=lambda: box.update(result=function(*args, **kwargs)))
    thread.start()
    return thread, box


def test_two_runs_changing_one_device_never_overlap(lab):
    nf, base = lab
    hold = threading.Event()
    approve = dict(answer=lambda q: True)
    first, first_box = in_background(
        invoke, nf, "ops", call("enable_port", FB="sw5", port="GigabitEthernet0/3"), hold=hold, **approve
    )
    deadline = time.time() + 60
    while time.time() < deadline and not run(nf.client, "get_status", worker=WORKER)["result"]["changes"]["locks"]:
        time.sleep(0.2)
    [lock] = run(nf.client, "get_status", worker=WORKER)["result"]["changes"]["locks"]
    assert (lock["device"], lock["agent"], lock["tool"]) == ("sw5", "ops", "enable_port")
    # the first change holds sw5 while its operator reads the preview: a change that cannot wait is refused
    refused, asked = invoke(nf, "impatient", call("enable_port", FB="sw5", port="GigabitEthernet0/1"), **approve)
    [summary] = refused["tool_calls"]
    assert summary["status"] == "refused" and not asked
    assert f"device sw5 is being changed by run {lock['run_id']} of agent 'ops' (enable_port" in summary["error"]
    # one that can wait waits until the first is made and verified, and says so
    seen = []
    second, second_box = in_background(
        invoke, nf, "ops", call("enable_port", FB="sw5", port="GigabitEthernet0/1"), seen=seen, **approve
    )
    eventually(
        lambda: any("enable_port waiting up to" in m and f"by run {lock['run_id']}" in m for m in seen),
        "the second change waits for sw5",
    )
    hold.set()
    first.join(120)
    second.join(120)
    for box in (first_box, second_box):
        assert box["result"][0]["tool_calls"][0]["change"]["outcome"] == "verified"
    # on the switch: one configuration session after the other
    assert device_log(nf, "sw5") == [
        "1 configure",
        "2 no shutdown GigabitEthernet0/3",
        "3 end",
        "4 configure",
        "5 no shutdown GigabitEthernet0/1",
        "6 end",
    ]
    # on the nornir worker: every job of the second change after the last job (the verification) of the first
    ports = [kwargs["job_data"]["port"] for _, _, kwargs in jobs(base) if kwargs.get("FB") == "sw5"]
    last_of_first = max(i for i, port in enumerate(ports) if port == "GigabitEthernet0/3")
    assert last_of_first < ports.index("GigabitEthernet0/1"), ports


def test_a_change_outside_its_window_is_refused_with_the_next_window(lab):
    nf, base = lab
    sent = len(jobs(base))
    result, asked = invoke(
        nf, "nightly", call("enable_port", FB="sw6", port="GigabitEthernet0/1"), answer=lambda q: True
    )
    [summary] = result["tool_calls"]
    assert summary["status"] == "refused" and not asked
    assert f"change windows ({tomorrow_window()}, UTC) are closed now" in summary["error"]
    assert "the next window opens" in summary["error"] and "00:00 UTC" in summary["error"]
    assert len(jobs(base)) == sent and device_log(nf, "sw6") == ["(no changes)"]


@pytest.mark.parametrize(
    "tool, arguments, error",
    [
        ("enable_port", {"FB": "sw*", "port": "GigabitEthernet0/1"}, "device 'sw*' must be named exactly"),
        (
            "enable_port",
            {"FB": "sw1", "FC": "sw", "port": "GigabitEthernet0/1"},
            "FC could pick devices the approval does not show",
        ),
        ("enable_port", {"port": "GigabitEthernet0/1"}, "a change names its devices (FB or FL)"),
        ("bring_up", {"switch": "sw1", "port": "GigabitEthernet0/1 ; reload"}, "must not contain | ; < > & ` or $("),
        ("bring_up", {"switch": "sw1", "port": "GigabitEthernet0/1\nreload"}, "must be a single line"),
        ("bring_up", {"switch": "sw*", "port": "GigabitEthernet0/1"}, "device 'sw*' must be named exactly"),
        ("bring_up", {"switch": "sw1", "port": "GigabitEthernet0/1 | redirect flash:x"}, "must not contain"),
    ],
)
def test_a_change_that_does_not_name_exactly_what_it_changes_sends_nothing(lab, tool, arguments, error):
    nf, base = lab
    sent, flows = len(jobs(base)), len(jobs(base, "workflow-worker-1"))
    result, asked = invoke(nf, "loose", call(tool, **arguments), answer=lambda q: True)
    [summary] = result["tool_calls"]
    assert summary["status"] == "refused" and error in summary["error"], summary["error"]
    assert not asked, "nobody is asked to approve a change that cannot be made as shown"
    assert (len(jobs(base)), len(jobs(base, "workflow-worker-1"))) == (sent, flows), "not even a preview was sent"


def test_a_workflow_tool_runs_only_after_approval_and_only_its_pinned_file(lab):
    nf, base = lab
    arguments = {"switch": "sw6", "port": "GigabitEthernet0/3"}
    result, asked = invoke(nf, "ops", call("bring_up", **arguments), answer=lambda q: False)
    assert len(asked) == 1, result
    [asked] = asked
    assert result["tool_calls"][0]["status"] == "refused"
    assert "wants to run tool bring_up (workflow.run)" in asked["question"]
    assert not jobs(base, "workflow-worker-1"), "a declined workflow is never sent"

    result, _ = invoke(nf, "ops", call("bring_up", **arguments), answer=lambda q: True)
    [summary] = result["tool_calls"]
    assert summary["status"] == "completed" and (summary["service"], summary["task"]) == ("workflow", "run")
    [(uuid, task, sent)] = jobs(base, "workflow-worker-1")
    assert (uuid, task) == (summary["job_uuid"], "run")
    # the workflow service ran the pinned file's steps, filled in, and nothing else
    assert [k for k in sent["workflow"] if k not in ("name", "description")] == ["before", "bring_up", "after"]
    assert sent["workflow"]["bring_up"]["kwargs"] == {
        "FB": "sw6",
        "config": ["interface GigabitEthernet0/3", "no shutdown"],
    }
    by_workflow = [
        j for j in jobs(base) if j[1] in ("cli", "cfg") and j[2].get("FB") == "sw6" and not j[2].get("job_data")
    ]
    assert [j[1] for j in by_workflow] == ["cli", "cfg", "cli"]
    # the model read each step's outcome and job UUID
    steps = json.loads(next(m["content"] for m in reversed(session(nf, "ops", result)) if m["role"] == "tool"))["steps"]
    assert {name: entries[0]["job_uuid"] for name, entries in steps.items()} == dict(
        zip(("before", "bring_up", "after"), (j[0] for j in by_workflow))
    )
    assert "GigabitEthernet0/3 is up" in steps["after"][0]["result"]["sw6"]["show interfaces GigabitEthernet0/3"]
    assert device_log(nf, "sw6") == ["1 configure", "2 no shutdown GigabitEthernet0/3", "3 end"]


def test_a_workflow_file_changed_after_approval_is_refused(lab):
    nf, base = lab
    path = base / "workflows" / "bring-up.yaml"
    sent = len(jobs(base, "workflow-worker-1"))

    def edit_then_approve(question):
        path.write_text(
            WORKFLOW.replace(
                'config: ["interface ${port}", "no shutdown"]',
                'config: ["interface ${port}", "no shutdown", "no shutdown"]',
            )
        )
        return True

    try:
        result, [asked] = invoke(
            nf, "ops", call("bring_up", switch="sw1", port="GigabitEthernet0/1"), answer=edit_then_approve
        )
    finally:
        path.write_text(WORKFLOW)
    [summary] = result["tool_calls"]
    assert summary["status"] == "refused" and "the change is not the one approved" in summary["error"]
    assert summary["change"]["digest"] in asked["question"]
    assert any("is not the one approved" in w for w in result["warnings"]), "the refusal is recorded on the run"
    assert len(jobs(base, "workflow-worker-1")) == sent and not changes_to(base, "sw1")


def test_only_a_workflow_s_approvers_decide_its_change_and_the_records_keep_what_was_approved(lab, app):
    nf, base = lab
    sent = len(jobs(base, "workflow-worker-1"))
    started = run(
        nf.client,
        "start_run",
        worker=WORKER,
        agent="reviewed",
        instructions=call("bring_up", switch="sw7", port="GigabitEthernet0/2"),
    )["result"]
    deadline, pending = time.time() + 60, []
    while not pending and time.time() < deadline:
        pending = run(nf.client, "get_approvals", worker=WORKER, agent="reviewed")["result"]
        time.sleep(0.3)
    [approval] = pending
    assert (approval["approvers"], approval["devices"]) == ([LEAD], ["sw7"])
    with test_shell.terminal_width(80):  # the operator sees who decides it, at 80 columns too
        inbox = test_shell.fits(nfcli(app, "hermes approvals"))
    assert re.search(rf"│ {approval['approval_id']} │.*│ {LEAD}\s+│", inbox), inbox
    assert "interface GigabitEthernet0/2\nno shutdown" in approval["preview"]["sw7"]

    refused = run(nf.client, "approve", worker=WORKER, approval_id=approval["approval_id"])
    assert (
        refused["failed"]
        and f"may not decide approval '{approval['approval_id']}': only {LEAD}" in refused["errors"][0]
    )
    time.sleep(2)
    assert len(jobs(base, "workflow-worker-1")) == sent and not changes_to(base, "sw7"), (
        "a refused decision sends nothing"
    )
    lead = nf.make_client(name=LEAD)
    try:
        decided = run(lead, "approve", worker=WORKER, approval_id=approval["approval_id"], note="preview checked")
    finally:
        lead.destroy()
    assert decided["result"]["decided_by"] == LEAD
    while time.time() < deadline:
        state = run(nf.client, "get_run", worker=WORKER, agent="reviewed", run_id=started["run_id"])["result"]
        if state["state"] == "finished":
            break
        time.sleep(0.3)
    [summary] = state["result"]["tool_calls"]
    assert summary["status"] == "completed" and summary["change"]["digest"] == approval["change_digest"]
    [(uuid, _, _)] = jobs(base, "workflow-worker-1")[sent:]
    assert summary["job_uuid"] == uuid
    [asked] = state["approvals"]
    assert (asked["decided_by"], asked["change_digest"], asked["preview"]) == (
        LEAD,
        approval["change_digest"],
        approval["preview"],
    )

    entries = run(nf.client, "get_audit", worker=WORKER, run_id=started["run_id"])["result"]["entries"]
    kinds = [e["kind"] for e in entries]
    assert kinds == [
        "run.started",
        "approval.requested",
        "approval.refused",
        "approval.decided",
        "tool.call",
        "run.ended",
    ]
    by_kind = {e["kind"]: e for e in entries}
    assert by_kind["approval.refused"]["actor"] == nf.client.name
    assert (by_kind["approval.decided"]["actor"], by_kind["approval.decided"]["data"]["change_digest"]) == (
        LEAD,
        approval["change_digest"],
    )
    call_entry = by_kind["tool.call"]["data"]
    assert (call_entry["job_uuid"], call_entry["change"]["digest"]) == (uuid, approval["change_digest"])


def test_a_workflow_that_is_not_the_reviewed_file_or_breaks_its_allow_list_never_runs(lab):
    nf, base = lab
    tools = run(nf.client, "get_agent", worker=WORKER, agent="pinned")["result"]["tools"]
    assert "is not the reviewed file: its sha256 is" in tools["bring_up"]["error"]
    assert (
        "step 'bring_up': argument config" in tools["reckless"]["error"]
        and "is not allowed by this tool" in tools["reckless"]["error"]
    )
    sent = len(jobs(base, "workflow-worker-1"))
    for tool in ("bring_up", "reckless"):
        result, asked = invoke(nf, "pinned", call(tool, switch="sw1", port="GigabitEthernet0/1"), answer=lambda q: True)
        assert result["tool_calls"][0]["status"] == "refused" and not asked
    assert len(jobs(base, "workflow-worker-1")) == sent


def session(nf, agent_name, result):
    return run(nf.client, "get_session", worker=WORKER, agent=agent_name, session_id=result["session_id"], limit=200)[
        "result"
    ]["messages"]


def test_a_change_its_tool_stopped_waiting_for_is_an_unknown_outcome_until_acknowledged_in_the_shell(lab, app):
    nf, base = lab
    result, _ = invoke(nf, "hasty", call("enable_port", FB="sw1", port="GigabitEthernet0/3"), answer=lambda q: True)
    [summary] = result["tool_calls"]
    [(job_uuid, _, _)] = changes_to(base, "sw1")
    assert summary["status"] == "failed" and summary["change"]["outcome"] == "outcome_unknown"
    assert f"the outcome of change job {job_uuid} on sw1 is unknown" in summary["error"]
    assert any(job_uuid in warning for warning in result["warnings"])

    out = " ".join(nfcli(app, "hermes status").split())
    assert "changes of unknown outcome: check the devices, then acknowledge" in out and job_uuid in out
    assert 'acknowledge one: hermes acknowledge OUTCOME note "WHAT THE DEVICES SHOW"' in out
    out = " ".join(nfcli(app, "hermes safety").split())
    assert job_uuid in out and "change breakers: none" in out and "devices being changed: none" in out
    # the device takes no other change, and nothing sends this one again
    refused, _ = invoke(nf, "ops", call("enable_port", FB="sw1", port="GigabitEthernet0/1"), answer=lambda q: True)
    assert f"device sw1 has a change of unknown outcome (job {job_uuid}" in refused["tool_calls"][0]["error"]
    assert [j[0] for j in changes_to(base, "sw1")] == [job_uuid]

    out = " ".join(nfcli(app, f'hermes acknowledge {job_uuid} note "port checked"').split())
    assert (
        f"change job {job_uuid} of run {result['run_id']} (enable_port on sw1, worker '{WORKER}') acknowledged by"
        in out
    )
    assert "changes of unknown outcome" not in nfcli(app, "hermes status")
    out = " ".join(nfcli(app, f"hermes acknowledge {job_uuid}").split())
    assert f"change outcome '{job_uuid}' is not known on any hermes worker" in out
    out = " ".join(nfcli(app, "hermes reset-breaker fragile").split())
    assert "the breaker of agent 'fragile' is closed with no failed verification" in out


def test_the_inbox_in_the_shell_shows_each_change_s_preview(lab, app):
    nf, base = lab
    started = run(
        nf.client,
        "start_run",
        worker=WORKER,
        agent="fixer",
        instructions=call("enable_port", FB="sw1", port="GigabitEthernet0/1"),
    )
    deadline = time.time() + 60
    while "change " not in (out := nfcli(app, "hermes approvals")) and time.time() < deadline:
        time.sleep(0.3)
    [approval] = run(nf.client, "get_approvals", worker=WORKER)["result"]
    assert f"approval {approval['approval_id']}: change {approval['change_digest']} on sw1" in out
    assert "  sw1:\n  | interface GigabitEthernet0/1\n  | no shutdown" in out
    out = nfcli(app, f"hermes run fixer {started['result']['run_id']}")
    assert "| interface GigabitEthernet0/1" in out
    nfcli(app, f"hermes deny {approval['approval_id']}")
    assert len(changes_to(base, "sw1")) == 1
