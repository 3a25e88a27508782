"""
Runs for any client: background runs that answer with their ids at once and
are followed with get_run, and the approval inbox that lets a run nobody is
attached to wait for an operator's decision - from another client, for a
scheduled check too.
"""

import time

from conftest import Lab, eventually, network_jobs, ok, run

WORKER = "hermes-worker-1"
FB_SCHEMA = {"type": "object", "properties": {"FB": {"type": "string"}}, "required": ["FB"]}
BOUNCE = {
    "input_schema": FB_SCHEMA,
    "approval": True,
    "norfab": {"service": "nornir", "task": "cli", "kwargs": {"commands": ["show users"]}},
}
AGENTS = {
    "alpha": {"instructions": "You are ALPHA."},
    "fixer": {"instructions": "You fix.", "toolsets": ["norfab"], "tools": {"bounce": BOUNCE}, "approval_timeout": 30},
    # a scheduled run reaches a change only through the inbox with a named approver
    "night-fixer": {
        "instructions": "You fix at night.",
        "toolsets": ["norfab"],
        "tools": {"bounce": BOUNCE},
        "approval_timeout": 30,
        "approvers": ["night-lead"],
    },
    "hasty": {
        "instructions": "You fix fast.",
        "toolsets": ["norfab"],
        "tools": {"bounce": BOUNCE},
        "approval_timeout": 2,
    },
}


LAB = Lab(workers={WORKER: AGENTS}, hosts=("r1",))


def follow(nf, agent, run_id, until=("finished",), timeout=60):
    """get_run until the run's state is one of ``until``; returns (last state, every event seen)."""
    events, offset, deadline = [], 0, time.time() + timeout
    while time.time() < deadline:
        state = ok(run(nf.client, "get_run", agent=agent, run_id=run_id, offset=offset))
        events += state["events"]
        offset = state["next_offset"]
        if state["state"] in until:
            return state, events
        time.sleep(0.2)
    raise AssertionError(f"run {run_id} stayed {state['state']}")


def shows_users(base):
    return [kwargs for _, kwargs in network_jobs(base) if kwargs.get("commands") == ["show users"]]


def test_a_background_run_answers_at_once_and_get_run_follows_it(lab):
    nf, _ = lab
    accepted = ok(run(nf.client, "start_run", agent="alpha", instructions="SLEEP 3"))
    assert accepted["run_id"]
    assert accepted["session_id"]
    assert accepted["state"] in ("queued", "running")
    finished, events = follow(nf, "alpha", accepted["run_id"])
    messages = [e["message"] for e in events]
    assert messages[0] == f"run {accepted['run_id']} started on agent 'alpha'"
    assert messages[-1].endswith("completed")
    assert finished["result"]["response"] == "SLEPT 3"
    assert finished["result"]["session_id"] == accepted["session_id"]
    later = ok(run(nf.client, "get_run", agent="alpha", run_id=accepted["run_id"], offset=finished["next_offset"]))
    assert later["events"] == []
    assert later["state"] == "finished"


def test_two_background_runs_overlap(lab):
    nf, _ = lab
    ids = [ok(run(nf.client, "start_run", agent="alpha", instructions=f"SLEEP 4 #{i}"))["run_id"] for i in range(2)]

    def both_running():
        states = [ok(run(nf.client, "get_run", agent="alpha", run_id=run_id))["state"] for run_id in ids]
        assert "finished" not in states, f"one run ended before the other ran: {states}"
        return states == ["running", "running"]

    eventually(both_running, "both runs running at once")
    for run_id in ids:
        assert follow(nf, "alpha", run_id)[0]["stop_reason"] == "completed"


def test_a_parked_approval_is_approved_by_another_client(lab):
    nf, base = lab
    accepted = ok(run(nf.client, "start_run", agent="fixer", instructions='CALL bounce {"FB": "r1"}'))
    waiting, _ = follow(nf, "fixer", accepted["run_id"], until=("waiting_for_approval",))
    [approval] = waiting["approvals"]
    assert (approval["tool"], approval["arguments"], approval["state"]) == ("bounce", {"FB": "r1"}, "pending")
    assert approval["target"] == "nornir.cli on any"
    assert len(approval["arguments_digest"]) == 12
    assert not shows_users(base), "the call ran before anyone approved it"
    other = nf.make_client(name="approver-client")
    try:
        assert [a["approval_id"] for a in ok(run(other, "get_approvals"))] == [approval["approval_id"]]
        decided = ok(run(other, "approve", approval_id=approval["approval_id"], note="change window CHG-42"))
    finally:
        other.destroy()
    assert decided["state"] == "approved"
    assert decided["note"] == "change window CHG-42"
    assert "approver-client" in decided["decided_by"]
    finished, _ = follow(nf, "fixer", accepted["run_id"])
    [call] = finished["result"]["tool_calls"]
    assert call["status"] == "completed"
    assert call["job_uuid"]
    assert finished["result"]["approvals"][0]["state"] == "approved"
    assert len(shows_users(base)) == 1


def test_a_denied_approval_continues_with_the_refusal(lab):
    nf, base = lab
    before = len(shows_users(base))
    accepted = ok(run(nf.client, "start_run", agent="fixer", instructions='CALL bounce {"FB": "r1"} #deny'))
    waiting, _ = follow(nf, "fixer", accepted["run_id"], until=("waiting_for_approval",))
    ok(run(nf.client, "deny", approval_id=waiting["approvals"][0]["approval_id"], note="not tonight"))
    finished, _ = follow(nf, "fixer", accepted["run_id"])
    [call] = finished["result"]["tool_calls"]
    assert call["status"] == "refused"
    assert "denied this call (not tonight)" in call["error"]
    assert finished["stop_reason"] == "completed"
    assert len(shows_users(base)) == before


def test_an_approval_nobody_decides_expires_and_is_recorded(lab):
    nf, base = lab
    before = len(shows_users(base))
    accepted = ok(run(nf.client, "start_run", agent="hasty", instructions='CALL bounce {"FB": "r1"}'))
    finished, _ = follow(nf, "hasty", accepted["run_id"])
    [approval] = finished["result"]["approvals"]
    assert approval["state"] == "expired"
    assert approval["note"] == "nobody decided in time"
    assert "expired" in finished["result"]["tool_calls"][0]["error"]
    assert len(shows_users(base)) == before
    res = run(nf.client, "approve", approval_id=approval["approval_id"])
    assert res["failed"]
    assert "is already expired" in res["errors"][0]


def test_a_scheduled_runs_approval_lands_in_the_same_inbox(lab):
    nf, base = lab
    before = len(shows_users(base))
    definition = {"name": "fix-r1", "prompt": 'CALL bounce {"FB": "r1"}', "schedule": "every 1h"}
    ok(run(nf.client, "schedule", agent="night-fixer", action="create", definition=definition))
    ok(run(nf.client, "schedule", agent="night-fixer", action="run", schedule_id="fix-r1"))
    [approval] = eventually(
        lambda: ok(run(nf.client, "get_approvals", agent="night-fixer")), "the scheduled run's approval in the inbox"
    )
    assert approval["approvers"] == ["night-lead"]
    lead = nf.make_client(name="night-lead")
    try:
        ok(run(lead, "approve", approval_id=approval["approval_id"], note="ok for the window"))
    finally:
        lead.destroy()
    [ran] = eventually(
        lambda: ok(run(nf.client, "schedule", agent="night-fixer", action="history", schedule_id="fix-r1"))["history"],
        "the scheduled run's history",
    )
    assert ran["tool_calls"][0]["status"] == "completed"
    assert len(shows_users(base)) == before + 1


def test_get_run_of_an_unknown_run(lab):
    nf, _ = lab
    res = run(nf.client, "get_run", agent="alpha", run_id="nope")
    assert res["failed"]
    assert "run 'nope' is not known on worker" in res["errors"][0]
