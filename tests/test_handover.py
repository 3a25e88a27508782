"""
A shift handover across two hermes worker processes (hermes-worker-2 started
from a worker-only inventory in its own folder): the client gathers each
worker's sessions and scheduled findings, and the designated agent's
briefing cites the sessions, runs and NorFab jobs of both workers, and the
change made with who approved it. The runs of one case (incident) are found
across both workers, their audit entries and evidence name it, and a
handover of the case has exactly its sessions.
"""

import json
import time

import pytest
from conftest import hermes_worker, invoke, network, norfab, ok, run

from norfab_hermes.routing import Hermes, RoutingError
from norfab_hermes.testing.embedded import remote_worker
from norfab_hermes.testing.scenario import Scenario
from norfab_hermes.testing.scripted_model import ScriptedModel, ScriptedModelServer

W1, W2 = "hermes-worker-1", "hermes-worker-2"
FB = {"type": "object", "properties": {"FB": {"type": "string"}}, "required": ["FB"]}
CLOCK = {"input_schema": FB, "norfab": {"service": "nornir", "task": "cli", "kwargs": {"commands": ["show clock"]}}}
CLEAR = {**CLOCK, "approval": True, "norfab": {**CLOCK["norfab"], "kwargs": {"commands": ["show users"]}}}
# the writer cites what the material gives it, line by line: it never invents a reference
BRIEFING = (
    "Verdict: {{ lines(message, '^### ') | length }} item(s) to hand over\n"
    "{% for line in lines(message, '^(### |Runs: |Run |NorFab jobs: |Action: )') %}- {{ line }}\n{% endfor %}"
)
SCENARIO = Scenario([{"match": "(?i)hand over the unresolved", "steps": [{"say": BRIEFING}]}])
W1_AGENTS = {
    "noc": {"instructions": "You write handovers."},
    "service": {
        "instructions": "You watch services.",
        "toolsets": ["norfab"],
        "tools": {"clock": CLOCK, "clear": CLEAR},
        "approval_timeout": 60,
    },
}
W2_AGENTS = {"routing": {"instructions": "You check routing.", "toolsets": ["norfab"], "tools": {"clock": CLOCK}}}


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    base = tmp_path_factory.mktemp("handover")
    with ScriptedModelServer(ScriptedModel(scenario=SCENARIO)) as model:
        workers, files = network(["r1"], users={W1: hermes_worker(model.base_url, W1_AGENTS)})
        workers[W2] = hermes_worker(model.base_url, W2_AGENTS)
        with norfab(base, workers, files, separate=(W2,)) as nf:
            with remote_worker(nf, W2, base / "core-host"):
                yield nf


def approved_change(nf):
    """A change the service agent made in the background, approved through the inbox."""
    started = ok(run(nf.client, "start_run", W1, agent="service", instructions='CALL clear {"FB": "r1"}'))
    deadline = time.time() + 60
    while not (pending := ok(run(nf.client, "get_approvals", W1, agent="service"))) and time.time() < deadline:
        time.sleep(0.3)
    decided = ok(run(nf.client, "approve", W1, approval_id=pending[0]["approval_id"], note="maintenance window"))
    while (state := ok(run(nf.client, "get_run", W1, agent="service", run_id=started["run_id"])))[
        "state"
    ] != "finished":
        assert time.time() < deadline, state
        time.sleep(0.3)
    return state["result"], decided["decided_by"]


def test_the_briefing_cites_sessions_runs_and_jobs_of_both_workers(fleet):
    nf = fleet
    first = invoke(nf, "service", 'CALL clock {"FB": "r1"}', worker=W1)
    second = invoke(nf, "routing", 'CALL clock {"FB": "r1"}', worker=W2)
    change, approver = approved_change(nf)
    definition = {"name": "core-watch", "prompt": 'CALL clock {"FB": "r1"}', "schedule": "every 1h"}
    ok(run(nf.client, "schedule", W2, agent="routing", action="create", definition=definition))
    ok(run(nf.client, "schedule", W2, agent="routing", action="run", schedule_id="core-watch"))
    deadline = time.time() + 60
    while not (
        history := ok(run(nf.client, "schedule", W2, agent="routing", action="history", schedule_id="core-watch"))[
            "history"
        ]
    ):
        assert time.time() < deadline
        time.sleep(0.5)

    reply = Hermes(nf.client).handover("noc", since="1h")
    assert not reply["failed"], reply["errors"]
    result = reply["result"]
    assert result["writer"] == f"noc@{W1}"
    assert result["unreachable"] == []
    assert {m["worker"] for m in result["material"]} == {W1, W2}
    briefing = result["briefing"]["response"]
    for done in (first, second, change):
        assert done["session_id"] in briefing, done["session_id"]
        assert done["run_id"] in briefing, done["session_id"]
        assert done["tool_calls"][0]["job_uuid"] in briefing
    [finding] = history
    assert f"Run {finding['run_id']}, session {finding['session_id']}" in briefing
    assert f"clear on r1 approved by {approver} (run {change['run_id']}" in briefing
    # the schedule's run is handed over as its finding, not as a session of its own
    assert f"Session {finding['session_id']}" not in briefing
    sessions = {s["session_id"]: s for m in result["material"] for s in m["sessions"]}
    assert sessions[second["session_id"]]["worker"] == W2
    assert "show clock" not in json.dumps(sessions[second["session_id"]]["actions"])


def test_a_handover_since_now_has_nothing_and_an_unknown_writer_is_refused(fleet):
    nf = fleet
    quiet = Hermes(nf.client).handover("noc", since="2099-01-01T00:00:00+00:00")["result"]
    assert all(not m["sessions"] and not m["findings"] for m in quiet["material"])
    assert "0 item(s) to hand over" in quiet["briefing"]["response"]
    with pytest.raises(RoutingError, match="agent 'nobody' not found"):
        Hermes(nf.client).handover("nobody")
    res = run(nf.client, "handover", W1, since="last tuesday")
    assert res["failed"]
    assert res["errors"][0].startswith("since: 'last tuesday' is neither")


CASE = "INC-2041"


def finished(nf, worker, agent, run_id):
    deadline = time.time() + 60
    while (state := ok(run(nf.client, "get_run", worker, agent=agent, run_id=run_id)))["state"] != "finished":
        assert time.time() < deadline, state
        time.sleep(0.3)
    return state


def test_the_runs_of_a_case_are_found_on_both_workers_and_handed_over(fleet):
    nf, hermes = fleet, Hermes(fleet.client)
    on_w1 = invoke(nf, "service", 'CALL clock {"FB": "r1"}', worker=W1, case_id=CASE)
    on_w2 = ok(hermes.invoke("routing", 'CALL clock {"FB": "r1"}', workers=W2, case_id=CASE))
    started = ok(run(nf.client, "start_run", W2, agent="routing", instructions="still up?", case_id=CASE))
    in_background = finished(nf, W2, "routing", started["run_id"])
    another = invoke(nf, "service", 'CALL clock {"FB": "r1"}', worker=W1, case_id="INC-9")
    invoke(nf, "routing", "no case", worker=W2)
    of_case = {on_w1["run_id"]: W1, on_w2["run_id"]: W2, started["run_id"]: W2}

    found = {r["run_id"]: (w, r["case_id"]) for w, res in hermes.runs(case_id=CASE).items() for r in ok(res)["runs"]}
    assert found == {run_id: (worker, CASE) for run_id, worker in of_case.items()}
    assert in_background["case_id"] == CASE
    entries = ok(run(nf.client, "get_audit", W1, run_id=on_w1["run_id"]))["entries"]
    assert {"run.started", "tool.call", "run.ended"} <= {e["kind"] for e in entries}
    assert {e["data"].get("case_id") for e in entries} == {CASE}
    evidence = {
        done["run_id"]: ok(run(nf.client, "evidence", W1, agent="service", run_id=done["run_id"]))["artifacts"]
        for done in (on_w1, another)
    }
    assert [a["case_id"] for a in evidence[on_w1["run_id"]]] == [CASE]
    assert [a["case_id"] for a in evidence[another["run_id"]]] == ["INC-9"]

    reply = hermes.handover("noc", case_id=CASE)
    assert not reply["failed"], reply["errors"]
    material = reply["result"]["material"]
    assert {m["case_id"] for m in material} == {CASE} and all(not m["findings"] for m in material)
    sessions = {s["session_id"] for m in material for s in m["sessions"]}
    assert sessions == {on_w1["session_id"], on_w2["session_id"], in_background["session_id"]}
    writer = reply["result"]["briefing"]
    assert on_w1["run_id"] in writer["response"] and on_w2["run_id"] in writer["response"]
    assert writer["run_id"] in {r["run_id"] for r in ok(run(nf.client, "get_runs", W1, case_id=CASE))["runs"]}


ASK = {"agent": "service", "instructions": "x"}


@pytest.mark.parametrize("task, kwargs", [("invoke", ASK), ("start_run", ASK), ("get_runs", {}), ("handover", {})])
def test_a_bad_case_id_is_refused_naming_the_field(fleet, task, kwargs):
    res = run(fleet.client, task, W1, case_id="INC 2041; drop", **kwargs)
    assert res["failed"]
    assert "case_id" in res["errors"][0] and "1 to 100 letters, digits or the characters" in res["errors"][0]
