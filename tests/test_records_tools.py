"""
Records tools: an agent reads its own worker's records of the agents its
definition names (sessions, a search through them, a session whole, schedule
history, evidence), and nothing else: not another agent's records, not the
service's tasks. Every attempt is checked on its side effect: the jobs the
hermes worker received.
"""

import json

import pytest
from conftest import Lab, invoke, network_jobs, run

WORKER = "hermes-worker-1"
FB = {"type": "object", "properties": {"FB": {"type": "string"}}, "required": ["FB"]}
CLOCK = {"input_schema": FB, "norfab": {"service": "nornir", "task": "cli", "kwargs": {"commands": ["show clock"]}}}
AGENTS = {
    "watched": {"instructions": "You watch r1.", "toolsets": ["norfab"], "tools": {"clock": CLOCK}},
    "private": {"instructions": "You keep your own counsel.", "toolsets": ["norfab"], "tools": {"clock": CLOCK}},
    "reader": {
        "instructions": "You read what the watcher did.",
        "toolsets": ["norfab"],
        "records": {"records": {"agents": ["watched", "reader"]}},
    },
}


LAB = Lab(workers={WORKER: AGENTS}, hosts=("r1",))


def read(nf, **arguments):
    """The reader's records tool called with ``arguments``: (the call's summary, what the model read)."""
    reply = invoke(nf, "reader", f"CALL records {json.dumps(arguments)}")
    [call] = reply["tool_calls"]
    session = run(nf.client, "get_session", agent="reader", session_id=reply["session_id"])["result"]
    [result] = [m["content"] for m in session["messages"] if m["role"] == "tool"]
    return call, json.loads(result)


@pytest.fixture(scope="module")
def watched_run(nf):
    return invoke(nf, "watched", 'TIMEKEEPING CALL clock {"FB": "r1"}')


def test_the_reader_lists_searches_and_reads_the_named_agents_sessions(nf, watched_run):
    call, listed = read(nf, action="list_sessions", agent="watched")
    assert call["status"] == "completed"
    assert call["service"] is None
    assert call["job_uuid"] is None
    assert watched_run["session_id"] in [s["session_id"] for s in listed["records"]]
    _, found = read(nf, action="search_sessions", agent="watched", text="timekeeping")
    assert {hit["session_id"] for hit in found["records"]} == {watched_run["session_id"]}
    _, session = read(nf, action="read_session", agent="watched", session_id=watched_run["session_id"])
    assert any("TIMEKEEPING" in (m["content"] or "") for m in session["records"]["messages"])


def test_the_reader_reads_the_evidence_whole(nf, watched_run):
    [artifact] = watched_run["artifacts"]
    _, listed = read(nf, action="list_evidence", agent="watched", run_id=watched_run["run_id"])
    assert [a["artifact_id"] for a in listed["records"]] == [artifact["artifact_id"]]
    _, whole = read(nf, action="read_artifact", agent="watched", artifact_id=artifact["artifact_id"])
    text = run(nf.client, "evidence", agent="watched", artifact_id=artifact["artifact_id"])["result"]["artifact"][
        "text"
    ]
    assert whole["records"]["text"] == text
    assert whole["records"]["sha256"] == artifact["sha256"]


def test_the_reader_reads_schedule_history(nf):
    definition = {"name": "clock-watch", "prompt": 'CALL clock {"FB": "r1"}', "schedule": "every 1h"}
    assert not run(nf.client, "schedule", agent="watched", action="create", definition=definition)["failed"]
    _, listed = read(nf, action="list_schedules", agent="watched")
    assert [s["name"] for s in listed["records"]] == ["clock-watch"]
    call, history = read(nf, action="schedule_history", agent="watched", schedule="clock-watch")
    assert call["status"] == "completed"
    assert history["records"] == []
    run(nf.client, "schedule", agent="watched", action="remove", schedule_id="clock-watch")


@pytest.mark.parametrize(
    "arguments, refusal",
    [
        ({"action": "list_sessions", "agent": "private"}, "is not one whose records this tool reads"),
        ({"action": "read_session", "agent": "watched", "session_id": "PRIVATE"}, "not found for agent 'watched'"),
        ({"action": "list_sessions", "agent": "watched", "task": "invoke"}, "are not arguments of this tool"),
        ({"action": "invoke", "agent": "watched"}, "action must be one of"),
        ({"action": "read_artifact", "agent": "watched", "artifact_id": "../private/index"}, "not an artifact id"),
    ],
)
def test_another_agents_records_and_the_services_tasks_stay_out_of_reach(lab, arguments, refusal):
    nf, base = lab
    private = invoke(nf, "private", 'CALL clock {"FB": "r1"}')
    if arguments.get("session_id") == "PRIVATE":
        arguments = {**arguments, "session_id": private["session_id"]}
    received = len(network_jobs(base, WORKER))
    call, answer = read(nf, **arguments)
    assert call["status"] == "refused"
    assert refusal in call["error"]
    assert not answer["ok"]
    assert "records" not in answer
    assert "show clock" not in json.dumps(answer)
    # the hermes worker received the reader's invoke and this test's read of its session, nothing else
    assert [task for task, _ in network_jobs(base, WORKER)[received:]] == ["invoke", "get_session"]


def test_another_agents_artifact_cannot_be_read(nf):
    private = invoke(nf, "private", 'CALL clock {"FB": "r1"}')
    artifact_id = private["artifacts"][0]["artifact_id"]
    call, answer = read(nf, action="read_artifact", agent="watched", artifact_id=artifact_id)
    assert call["status"] == "refused"
    assert f"artifact '{artifact_id}' not found for agent 'watched'" in call["error"]
    assert "text" not in json.dumps(answer)
