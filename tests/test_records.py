"""
A record you can audit: every run and approval is kept in the worker's
records and read back after a kill -9 (a parked approval shows as ended by
the restart and its call is never made); get_runs finds runs by agent,
state, stop reason, time, schedule, decider and text; only an agent's
approvers decide its approvals; the audit log's hash chain shows an edited
or deleted entry. The hermes worker runs as its own process, as on a host.
"""

import signal
import sqlite3
import time
from pathlib import Path

import pytest
from conftest import hermes_worker, network, network_jobs, norfab, ok, run

from norfab_hermes.testing.embedded import kill_process_group, worker_process

WORKER = "hermes-worker-1"
FB_SCHEMA = {"type": "object", "properties": {"FB": {"type": "string"}}, "required": ["FB"]}
CLOCK = {
    "input_schema": FB_SCHEMA,
    "norfab": {"service": "nornir", "task": "cli", "kwargs": {"commands": ["show clock"]}},
}
BOUNCE = {
    "input_schema": FB_SCHEMA,
    "approval": True,
    "norfab": {"service": "nornir", "task": "cli", "kwargs": {"commands": ["show users"]}},
}
MODEL = {"model": {"default": "alpha-model"}}
AGENTS = {
    "alpha": {"instructions": "You are ALPHA.", "hermes": MODEL},
    "fixer": {
        "instructions": "You fix.",
        "hermes": MODEL,
        "toolsets": ["norfab"],
        "tools": {"clock": CLOCK, "bounce": BOUNCE},
        "approval_timeout": 120,
        "approvers": ["approver-client"],
    },
}
APPROVER = "approver-client"


@pytest.fixture(scope="module")
def lab(model, tmp_path_factory):
    """Its own lab: the hermes worker is left out of the topology, to run as a process of its own."""
    base = tmp_path_factory.mktemp("lab")
    workers, files = network(["r1"], users={WORKER: hermes_worker(model.base_url, AGENTS)})
    with norfab(base, workers, files, separate=(WORKER,)) as nf:
        yield nf, base


@pytest.fixture(scope="module")
def worker(lab):
    """The hermes worker process, for the tests after the kill -9 one."""
    nf, _ = lab
    with worker_process(nf, WORKER):
        yield


@pytest.fixture(scope="module")
def approver(lab, worker):
    client = lab[0].make_client(name=APPROVER)
    yield client
    client.destroy()


def until(nf, agent, run_id, states=("finished",), timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        state = ok(run(nf.client, "get_run", agent=agent, run_id=run_id))
        if state["state"] in states:
            return state
        time.sleep(0.2)
    raise AssertionError(f"run {run_id} stayed {state['state']}")


def shows_users(base):
    return [kwargs for _, kwargs in network_jobs(base) if kwargs.get("commands") == ["show users"]]


def records_db(nf) -> Path:
    return Path(ok(run(nf.client, "get_status"))["hermes_home"]) / "norfab_records.db"


def test_runs_and_approvals_read_back_after_a_kill_9(lab):
    nf, base = lab
    with worker_process(nf, WORKER) as process:
        done = ok(run(nf.client, "invoke", agent="alpha", instructions="remember KIWI"))
        parked = ok(
            run(nf.client, "start_run", agent="fixer", instructions='CALL clock {"FB": "r1"} CALL bounce {"FB": "r1"}')
        )
        waiting = until(nf, "fixer", parked["run_id"], ("waiting_for_approval",))
        [approval] = waiting["approvals"]
        assert approval["approvers"] == [APPROVER]
        kill_process_group(process, signal.SIGKILL)

    with worker_process(nf, WORKER):
        old = ok(run(nf.client, "get_run", agent="alpha", run_id=done["run_id"]))
        assert (old["state"], old["stop_reason"], old["instructions"]) == ("finished", "completed", "remember KIWI")
        assert old["result"]["response"] == done["response"] == "ECHO: remember KIWI"
        assert old["result"]["usage"] == done["usage"]
        assert old["client"] == nf.client.name, "the record names the NorFab client that asked"

        cut = ok(run(nf.client, "get_run", agent="fixer", run_id=parked["run_id"]))
        assert (cut["state"], cut["stop_reason"]) == ("finished", "interrupted")
        assert "stopped (crash or kill) before the run finished" in cut["result"]["warnings"][0]
        [ended] = cut["approvals"]
        assert (ended["approval_id"], ended["state"]) == (approval["approval_id"], "expired")
        assert ended["note"].startswith("ended by the worker restart")
        [clock] = [call for call in cut["result"]["tool_calls"] if call["tool"] == "clock"]
        assert clock["status"] == "completed" and clock["job_uuid"], "the call made before the crash is in the record"

        assert ok(run(nf.client, "get_approvals")) == []
        late = run(nf.client, "approve", approval_id=approval["approval_id"])
        assert late["failed"] and "is already expired (ended by the worker restart" in late["errors"][0]
        time.sleep(3)
        assert not shows_users(base), "the approval-gated call ran after the restart"


def test_only_the_agents_approvers_decide_its_approvals(lab, worker, approver):
    nf, base = lab
    before = len(shows_users(base))
    accepted = ok(run(nf.client, "start_run", agent="fixer", instructions='CALL bounce {"FB": "r1"} #approvers'))
    [approval] = until(nf, "fixer", accepted["run_id"], ("waiting_for_approval",))["approvals"]
    refused = run(nf.client, "approve", approval_id=approval["approval_id"], note="let me")
    assert refused["failed"] and refused["result"]["code"] == "not_allowed"
    assert f"only {APPROVER} may" in refused["errors"][0]
    denied = run(nf.client, "deny", approval_id=approval["approval_id"])
    assert denied["failed"] and denied["result"]["code"] == "not_allowed"
    assert ok(run(nf.client, "get_approvals"))[0]["state"] == "pending"
    time.sleep(1)
    assert len(shows_users(base)) == before, "a refused decision let the call through"

    decided = ok(run(approver, "approve", approval_id=approval["approval_id"], note="CHG-7"))
    assert (decided["state"], decided["decided_by"], decided["note"]) == ("approved", APPROVER, "CHG-7")
    finished = until(nf, "fixer", accepted["run_id"])
    assert finished["result"]["tool_calls"][0]["status"] == "completed" and len(shows_users(base)) == before + 1

    entries = ok(run(nf.client, "get_audit", run_id=accepted["run_id"]))["entries"]
    kinds = [(e["kind"], e["actor"]) for e in entries]
    assert ("approval.refused", nf.client.name) in kinds and ("approval.decided", APPROVER) in kinds
    assert kinds[0][0] == "run.started" and kinds[-1][0] == "run.ended"


def test_get_runs_filters(lab, worker):
    nf, _ = lab
    mark = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(time.time() - 1))
    first = ok(run(nf.client, "invoke", agent="alpha", instructions="FILTER one Needle"))
    second = ok(run(nf.client, "invoke", agent="alpha", instructions="FILTER two"))
    ok(
        run(
            nf.client,
            "schedule",
            agent="alpha",
            action="create",
            definition={"name": "nightly", "prompt": "FILTER nightly", "schedule": "every 1h"},
        )
    )
    schedule_id = ok(run(nf.client, "schedule", agent="alpha", action="run", schedule_id="nightly"))["schedules"][0][
        "schedule_id"
    ]
    deadline = time.time() + 60
    while (
        not ok(run(nf.client, "get_runs", schedule_id=schedule_id, state="finished"))["runs"] and time.time() < deadline
    ):
        time.sleep(0.3)

    def ids(**filters):
        return [r["run_id"] for r in ok(run(nf.client, "get_runs", **filters))["runs"]]

    assert ids(text="needle") == [first["run_id"]]
    assert ids(agent="alpha", since=mark, text="echo: filter T") == [second["run_id"]], "a substring of the answer"
    short = ids(agent="alpha", since=mark, text="tW")  # shorter than a trigram: 'FILTER two'
    assert second["run_id"] in short and first["run_id"] not in short
    assert ids(agent="alpha", since=mark, text="FILTER two") == [second["run_id"]]
    assert ids(agent="alpha", since=mark)[-2:] == [second["run_id"], first["run_id"]], "newest first"
    assert ids(until=mark, text="FILTER") == []
    [scheduled] = ok(run(nf.client, "get_runs", schedule_id=schedule_id))["runs"]
    assert scheduled["client"] is None and scheduled["stop_reason"] == "completed"
    whole = ok(run(nf.client, "get_run", agent="alpha", run_id=scheduled["run_id"]))
    assert whole["instructions"].endswith("FILTER nightly") and whole["schedule_id"] == schedule_id
    # the run the kill -9 cut is the one interrupted; every run has ended
    assert [r["agent"] for r in ok(run(nf.client, "get_runs", stop_reason="interrupted"))["runs"]] == ["fixer"]
    assert ok(run(nf.client, "get_runs", state="finished"))["total"] == ok(run(nf.client, "get_runs"))["total"] > 5
    assert ids(state="running") == []
    decided = ok(run(nf.client, "get_runs", decided_by=APPROVER))["runs"]
    assert len(decided) == 1 and decided[0]["decided_by"] == [APPROVER] and decided[0]["agent"] == "fixer"
    assert ids(decided_by="nobody") == []

    page = ok(run(nf.client, "get_runs", agent="alpha", limit=1))
    rest = ok(run(nf.client, "get_runs", agent="alpha", limit=100, offset=page["next_offset"]))
    assert page["total"] == rest["total"] == 1 + len(rest["runs"]) and rest["next_offset"] is None
    bad = run(nf.client, "get_runs", since="yesterday")
    assert bad["failed"] and "since" in bad["errors"][0] and "an age (30m, 12h, 7d)" in bad["errors"][0]


def test_agent_and_schedule_changes_are_audited(lab, worker):
    nf, _ = lab
    ok(run(nf.client, "manage_agent", action="create", agent="scratch", definition={"instructions": "You help."}))
    ok(run(nf.client, "manage_agent", action="delete", agent="scratch"))
    changes = ok(run(nf.client, "get_audit", agent="scratch"))["entries"]
    assert [(e["kind"], e["actor"]) for e in changes] == [
        ("agent.create", nf.client.name),
        ("agent.delete", nf.client.name),
    ]
    assert any("removed profile" in step for step in changes[1]["data"]["done"])
    schedule = [
        (e["kind"], e["data"]["schedules"][0]["name"])
        for e in ok(run(nf.client, "get_audit", agent="alpha"))["entries"]
        if e["kind"].startswith("schedule.")
    ]
    assert schedule == [("schedule.create", "nightly"), ("schedule.run", "nightly")]


def test_an_edited_or_deleted_audit_entry_fails_verify(lab, worker):
    nf, _ = lab
    intact = ok(run(nf.client, "verify_audit"))
    assert intact["ok"] and intact["entries"] > 10 and intact["problems"] == []
    export = ok(run(nf.client, "get_audit", limit=5))
    assert [e["seq"] for e in export["entries"]] == [1, 2, 3, 4, 5] and export["next_after"] == 5
    assert export["entries"][1]["prev"] == export["entries"][0]["hash"]

    with sqlite3.connect(records_db(nf)) as db:
        db.execute("""UPDATE audit SET data = replace(data, 'remember KIWI', 'remember LIME') WHERE seq = 1""")
    edited = ok(run(nf.client, "verify_audit"))
    assert not edited["ok"] and edited["problems"] == ["entry 1 was edited: its hash does not match its content"]

    with sqlite3.connect(records_db(nf)) as db:
        db.execute("DELETE FROM audit WHERE seq = 4")
    deleted = ok(run(nf.client, "verify_audit"))
    assert "entries 4 to 4 are missing (deleted)" in deleted["problems"]

    with sqlite3.connect(records_db(nf)) as db:
        db.execute("DELETE FROM audit WHERE seq = (SELECT max(seq) FROM audit)")
    cut = ok(run(nf.client, "verify_audit"))
    assert any("entries at the end were deleted" in p for p in cut["problems"])


def test_a_run_record_names_the_model_the_versions_and_the_definition_that_answered(lab, worker):
    nf, _ = lab
    first = ok(run(nf.client, "invoke", agent="alpha", instructions="who answers"))
    again = ok(run(nf.client, "invoke", agent="alpha", instructions="who answers again"))
    other = ok(run(nf.client, "invoke", agent="fixer", instructions="who fixes"))
    made = {
        done["run_id"]: ok(run(nf.client, "get_run", agent=done["agent"], run_id=done["run_id"]))["provenance"]
        for done in (first, again, other)
    }
    versions = ok(run(nf.client, "get_version"))
    assert made[first["run_id"]] == {
        "model": "alpha-model",
        "provider": "custom",
        "hermes_version": versions["hermes-agent"],
        "norfab_hermes_version": versions["norfab-hermes"],
        "definition_digest": made[first["run_id"]]["definition_digest"],
    }
    digest = made[first["run_id"]]["definition_digest"]
    assert made[again["run_id"]]["definition_digest"] == digest, "the same definition gives the same digest"
    assert made[other["run_id"]]["definition_digest"] != digest, "another definition gives another digest"

    of_alpha = ok(run(nf.client, "get_runs", definition_digest=digest))["runs"]
    assert {first["run_id"], again["run_id"]} <= {r["run_id"] for r in of_alpha}
    assert {r["agent"] for r in of_alpha} == {"alpha"} and of_alpha[0]["provenance"] == made[again["run_id"]]
    by_model = {r["run_id"] for r in ok(run(nf.client, "get_runs", model="alpha-model", provider="custom"))["runs"]}
    assert set(made) <= by_model
    assert ok(run(nf.client, "get_runs", model="beta-model"))["runs"] == []
    [started] = ok(run(nf.client, "get_audit", run_id=first["run_id"], kind="run.started"))["entries"]
    assert started["data"]["provenance"] == made[first["run_id"]]
