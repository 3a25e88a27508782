"""Interrupting runs: by run id, before the turn would have ended, even when every run slot is busy.
How fast is ``make bench``'s (interrupt latency); here the order of events is asserted."""

import uuid

from conftest import Lab, eventually, result_of, run, start_invoke

WORKER = "hermes-worker-1"


LAB = Lab(
    workers={WORKER: {"alpha": {"instructions": "You are ALPHA."}, "beta": {"instructions": "You are BETA."}}},
    settings={"max_concurrent_runs": 2},
)


def test_interrupt_stops_the_run_before_its_turn_ends(nf, model):
    tag = uuid.uuid4().hex[:8]
    future, run_id = start_invoke(nf.client, WORKER, agent="alpha", instructions=f"{tag} SLEEP 60")
    active = run(nf.client, "get_status")["result"]["active_runs"]
    assert [(r["run_id"], r["agent"]) for r in active] == [(run_id, "alpha")]
    assert active[0]["started"]

    eventually(lambda: any(tag in str(r["messages"]) for r in model.model.completions()), "the turn reached the model")
    ack = run(nf.client, "interrupt", agent="alpha", run_id=run_id)
    assert ack["result"] == {"run_id": run_id, "agent": "alpha", "worker": WORKER, "interrupted": True}
    # the model holds the turn for 60 s: a reply well before that is the interrupt's
    result = result_of(future, WORKER, timeout=30)["result"]
    assert result["stop_reason"] == "interrupted"
    assert result["run_id"] == run_id
    assert "interrupted" in result["response"].lower()  # the partial reply Hermes had
    assert run(nf.client, "get_status")["result"]["active_runs"] == []


def test_interrupting_unknown_or_finished_runs_is_a_clear_error(nf):
    res = run(nf.client, "interrupt", agent="alpha", run_id="nope")
    assert res["failed"]
    assert res["errors"] == [f"run 'nope' is not running on worker '{WORKER}'"]

    done = run(nf.client, "invoke", agent="alpha", instructions="quick")["result"]
    res = run(nf.client, "interrupt", agent="alpha", run_id=done["run_id"])
    assert res["failed"]
    assert "already finished: completed" in res["errors"][0]


def test_interrupt_names_the_runs_real_agent(nf):
    future, run_id = start_invoke(nf.client, WORKER, agent="alpha", instructions="SLEEP 60")
    res = run(nf.client, "interrupt", agent="beta", run_id=run_id)
    assert res["failed"]
    assert f"run '{run_id}' belongs to agent 'alpha', not 'beta'" in res["errors"][0]
    run(nf.client, "interrupt", agent="alpha", run_id=run_id)
    assert result_of(future, WORKER)["result"]["stop_reason"] == "interrupted"


def test_control_tasks_answer_while_every_run_slot_is_busy(nf):
    runs = [start_invoke(nf.client, WORKER, agent=a, instructions="SLEEP 60") for a in ("alpha", "beta")]
    # a third run queues for a slot; status and interrupt still get through
    queued = nf.client.submit_job(
        "hermes", "invoke", kwargs={"agent": "alpha", "instructions": "queued"}, workers=WORKER, timeout=120
    )
    # both answer while the runs hold their slots for 60 s: a control task queued behind them would not
    status = run(nf.client, "get_status", job_timeout=30)["result"]
    assert len(status["active_runs"]) == 2
    ack = run(nf.client, "interrupt", agent="alpha", run_id=runs[0][1], job_timeout=30)
    assert ack["result"]["interrupted"]
    assert result_of(runs[0][0], WORKER, timeout=30)["result"]["stop_reason"] == "interrupted"
    # the freed slot serves the queued run
    assert result_of(queued, WORKER)["result"]["response"] == "ECHO: queued"
    run(nf.client, "interrupt", agent="beta", run_id=runs[1][1])
    assert result_of(runs[1][0], WORKER)["result"]["stop_reason"] == "interrupted"
