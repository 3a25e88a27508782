"""
A shift handover across two hermes worker processes (hermes-worker-2 started
from a worker-only inventory in its own folder): the client gathers each
worker's sessions and scheduled findings, and the designated agent's
briefing cites the sessions, runs and NorFab jobs of both workers, and the
change made with who approved it.
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
