"""
Structured answers: invoke, start_run and schedules take a JSON schema for
the answer; an answer that matches is carried parsed, one that does not gets
one corrective turn, and one that still does not is reported, never passed
off as structured.
"""

import json
import time

import pytest
from conftest import Lab, invoke, run

from norfab_hermes.testing.scenario import Scenario
from norfab_hermes.testing.scripted_model import ScriptedModel, ScriptedModelServer

WORKER = "hermes-worker-1"
SCHEMA = {
    "type": "object",
    "properties": {"blockers": {"type": "array", "items": {"type": "string"}}, "ready": {"type": "boolean"}},
    "required": ["blockers", "ready"],
    "additionalProperties": False,
}
RULES = [
    {"match": "CHECKLIST GOOD", "steps": [{"say": '```json\n{"blockers": ["ACL 20"], "ready": false}\n```'}]},
    {"match": "CHECKLIST SLOPPY", "steps": [{"say": "Ready: no. Blockers: ACL 20."}]},
    {
        "match": "Answer again with only the JSON document",
        "steps": [
            {"say": '{% if \'HOPELESS\' in system %}still prose{% else %}{"blockers": [], "ready": true}{% endif %}'}
        ],
    },
]
AGENTS = {
    "planner": {"instructions": "You plan maintenance."},
    "hopeless": {"instructions": "You are HOPELESS at formats."},
}


@pytest.fixture(scope="module")
def model():
    with ScriptedModelServer(ScriptedModel(Scenario(RULES))) as server:
        yield server


LAB = Lab(workers={WORKER: AGENTS})


def asked(model, text):
    return [r for r in model.model.completions() if text in json.dumps(r["messages"][-1])]


def test_an_answer_that_matches_the_schema_is_carried_parsed(nf, model):
    result = invoke(nf, "planner", "CHECKLIST GOOD", response_schema=SCHEMA)
    assert result["structured_response"] == {"blockers": ["ACL 20"], "ready": False}
    assert result["structured_error"] is None
    assert result["stop_reason"] == "completed"
    [request] = asked(model, "CHECKLIST GOOD")
    sent = str(request["messages"][-1]["content"])
    assert "Answer format" in sent, "the model was not given the schema"
    assert json.dumps(SCHEMA, sort_keys=True) in sent, "the model was not given the schema"


def test_a_broken_answer_is_corrected_once(nf, model):
    before = len(asked(model, "Answer again with only the JSON document"))
    result = invoke(nf, "planner", "CHECKLIST SLOPPY", response_schema=SCHEMA)
    assert result["structured_response"] == {"blockers": [], "ready": True}
    assert len(asked(model, "Answer again with only the JSON document")) == before + 1
    assert result["usage"]["api_calls"] == 2


def test_an_answer_still_broken_after_one_retry_is_reported(nf, model):
    before = len(asked(model, "Answer again with only the JSON document"))
    result = invoke(nf, "hopeless", "CHECKLIST SLOPPY", response_schema=SCHEMA)
    assert result["structured_response"] is None
    assert result["response"] == "still prose"
    assert "after one corrective turn" in result["structured_error"]
    assert "not JSON" in result["structured_error"]
    assert len(asked(model, "Answer again with only the JSON document")) == before + 1, "retried more than once"


def test_start_run_and_a_bad_schema(nf):
    started = run(nf.client, "start_run", agent="planner", instructions="CHECKLIST GOOD", response_schema=SCHEMA)
    assert not started["failed"], started["errors"]
    run_id, deadline = started["result"]["run_id"], time.time() + 60
    while True:
        state = run(nf.client, "get_run", agent="planner", run_id=run_id)["result"]
        if state["state"] == "finished" or time.time() > deadline:
            break
        time.sleep(0.3)
    assert state["result"]["structured_response"] == {"blockers": ["ACL 20"], "ready": False}
    res = run(nf.client, "invoke", agent="planner", instructions="x", response_schema={"type": "nonsense"})
    assert res["failed"]
    assert "response_schema" in res["errors"][0]
    assert "not a valid JSON schema" in res["errors"][0]
