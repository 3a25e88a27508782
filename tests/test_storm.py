"""
Alarm-storm control: fifty alarms of one incident, sent with one dedupe_key,
start one investigation; every caller gets that run. An agent starts at
most max_runs_per_minute runs; one more is refused as busy, with a code,
and the refusal is in the audit log.
"""

import time

from conftest import Lab, ok, run

WORKER = "hermes-worker-1"
AGENTS = {
    "alarm": {"instructions": "You investigate alarms.", "dedupe_window": 120},
    "paced": {"instructions": "You investigate alarms.", "max_runs_per_minute": 2},
}

LAB = Lab(workers={WORKER: AGENTS})


def asked(model, text):
    return [r for r in model.model.completions() if text in str(r["messages"])]


def test_fifty_start_runs_with_one_dedupe_key_start_one_run(nf, model):
    futures = [
        nf.client.submit_job(
            "hermes",
            "start_run",
            kwargs={"agent": "alarm", "instructions": "STORM-1 r1 down SLEEP 2", "dedupe_key": "INC-1"},
            workers=WORKER,
            timeout=120,
        )
        for _ in range(50)
    ]
    states = [ok(future.result(timeout=120)[WORKER]) for future in futures]
    assert len({state["run_id"] for state in states}) == 1
    assert sorted(state["deduplicated"] for state in states) == [False] + [True] * 49
    page = ok(run(nf.client, "get_runs", agent="alarm", text="STORM-1"))
    assert page["total"] == 1 and page["runs"][0]["run_id"] == states[0]["run_id"]
    finished = until_finished(nf, "alarm", states[0]["run_id"])
    assert finished["instructions"] == "STORM-1 r1 down SLEEP 2" and finished["stop_reason"] == "completed"
    assert len(asked(model, "STORM-1")) == 1, "the model was asked more than once"


def until_finished(nf, agent, run_id, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        state = ok(run(nf.client, "get_run", agent=agent, run_id=run_id))
        if state["state"] == "finished":
            return state
        time.sleep(0.2)
    raise AssertionError(f"run {run_id} did not finish")


def test_an_invoke_with_a_known_key_gets_the_earlier_runs_answer(nf, model):
    first = ok(run(nf.client, "invoke", agent="alarm", instructions="STORM-2 r2 flaps", dedupe_key="INC-2"))
    again = ok(run(nf.client, "invoke", agent="alarm", instructions="STORM-2 r2 flaps again", dedupe_key="INC-2"))
    assert (first["deduplicated"], again["deduplicated"]) == (False, True)
    assert again["run_id"] == first["run_id"] and again["response"] == first["response"] == "ECHO: STORM-2 r2 flaps"
    assert not asked(model, "flaps again"), "the repeated alarm reached the model"
    other = ok(run(nf.client, "invoke", agent="alarm", instructions="STORM-2 r3 down", dedupe_key="INC-3"))
    assert other["run_id"] != first["run_id"] and not other["deduplicated"]


def test_an_agent_starts_at_most_its_runs_per_minute(nf, model):
    started = [ok(run(nf.client, "start_run", agent="paced", instructions=f"PACE {n}"))["run_id"] for n in range(2)]
    assert len(set(started)) == 2
    refused = run(nf.client, "start_run", agent="paced", instructions="PACE 2")
    assert refused["failed"] and refused["result"]["code"] == "busy"
    assert "started 2 runs in the last minute, its max_runs_per_minute" in refused["errors"][0]
    assert not asked(model, "PACE 2")
    entries = ok(run(nf.client, "get_audit", agent="paced", kind="run.refused"))["entries"]
    assert [e["data"]["code"] for e in entries] == ["busy"]
