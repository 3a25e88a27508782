"""
The evidence store end to end over FakeNOS: every tool result a run receives
is kept as an artifact whose digest matches what the network worker
returned, read back whole when the model saw it cut, listed in the run's
result, kept to its own agent, and quoted in an incident note whose every
quoted line links to its artifact and digest.
"""

import hashlib
import json
import sqlite3
import zlib

import pytest
from conftest import Lab, invoke, ok, run

from norfab_hermes.testing.scenario import Scenario
from norfab_hermes.testing.scripted_model import ScriptedModel, ScriptedModelServer

WORKER = "hermes-worker-1"
FB = {"type": "object", "properties": {"FB": {"type": "string"}}, "required": ["FB"]}
BRIEF = "show ip interface brief"
CLOCK = "show clock"
TOOLS = {
    name: {"input_schema": FB, "norfab": {"service": "nornir", "task": "cli", "kwargs": {"commands": [command]}}}
    for name, command in (("brief", BRIEF), ("clock", CLOCK))
}
AGENTS = {
    "checker": {"instructions": "You check interfaces.", "toolsets": ["norfab"], "tools": TOOLS},
    "other": {"instructions": "You are another agent.", "toolsets": ["norfab"], "tools": TOOLS},
}
RULES = [
    {
        "match": r"QUOTE (?P<host>r\d)",
        "steps": [
            {"call": "clock", "args": {"FB": "{{ host }}"}},
            {
                "say": "Verdict: the clock of {{ host }} runs\n```\n{% for line in grep('clock', 'UTC') %}{{ line }}\n{% endfor %}"
                "GigabitEthernet9/9 never printed by any device\n```"
            },
        ],
    }
]


@pytest.fixture(scope="module")
def model():
    with ScriptedModelServer(ScriptedModel(Scenario(RULES))) as server:
        yield server


# the model is shown a cut version of results longer than 400 characters
LAB = Lab(workers={WORKER: AGENTS}, hosts=("r1",), settings={"tool_result_max_chars": 400})


def network_result(base, job_uuid, worker="nornir-worker-1"):
    """What the network worker returned for one job, from its own job store."""
    with sqlite3.connect(base / f"__norfab__/files/worker/{worker}/{worker}.db") as db:
        (blob,) = db.execute("SELECT result_data FROM jobs WHERE uuid = ?", (job_uuid,)).fetchone()
    try:
        data = json.loads(zlib.decompress(blob))
    except zlib.error:
        data = json.loads(blob)
    return data["result"][worker]["result"]


def test_a_tool_result_is_kept_whole_with_the_digest_of_what_the_network_worker_returned(lab):
    nf, base = lab
    reply = invoke(nf, "checker", 'CALL brief {"FB": "r1"}')
    [call] = reply["tool_calls"]
    [artifact] = reply["artifacts"]
    assert call["truncated"], "the model was meant to see a cut result (tool_result_max_chars 400)"
    assert (artifact["job_uuid"], artifact["device"], artifact["command"]) == (call["job_uuid"], "r1", BRIEF)
    assert (artifact["run_id"], artifact["session_id"]) == (reply["run_id"], reply["session_id"])
    raw = network_result(base, call["job_uuid"])["r1"][BRIEF]
    assert artifact["sha256"] == hashlib.sha256(raw.encode()).hexdigest()

    whole = ok(run(nf.client, "evidence", agent="checker", artifact_id=artifact["artifact_id"]))["artifact"]
    assert whole["text"] == raw, "the artifact is not the whole output"
    assert len(raw) > 400, "the artifact is not the whole output"
    listed = ok(run(nf.client, "evidence", agent="checker", run_id=reply["run_id"]))["artifacts"]
    assert [a["artifact_id"] for a in listed] == [artifact["artifact_id"]]


def test_an_artifact_is_its_own_agents(nf):
    reply = invoke(nf, "checker", 'CALL brief {"FB": "r1"}')
    artifact_id = reply["artifacts"][0]["artifact_id"]
    res = run(nf.client, "evidence", agent="other", artifact_id=artifact_id)
    assert res["failed"]
    assert res["result"]["code"] == "unknown_artifact"
    assert not ok(run(nf.client, "evidence", agent="other", run_id=reply["run_id"]))["artifacts"]
    res = run(nf.client, "evidence", agent="checker", artifact_id="../../checker/index")
    assert res["failed"]
    assert "artifact_id" in res["errors"][0]


def test_the_incident_note_links_every_quoted_line_to_its_artifact_and_digest(nf):
    reply = invoke(nf, "checker", "QUOTE r1")
    [artifact] = reply["artifacts"]
    note = ok(run(nf.client, "report", agent="checker", session_id=reply["session_id"]))
    quoted = reply["response"].split("```")[1].strip().splitlines()
    assert len(quoted) == 2, reply["response"]
    assert note["quotes"] == 2, reply["response"]
    assert note["linked"] == 1, reply["response"]
    link = f"from [{artifact['artifact_id']}](artifacts/{artifact['artifact_id']}.txt) r1 {CLOCK}, sha256 `{artifact['sha256']}`"
    markdown = note["markdown"]
    for line in quoted[:-1]:
        assert f"> `{line.strip()}`  \n> {link}" in markdown
    assert "> `GigabitEthernet9/9 never printed by any device`  \n> **not found in the evidence" in markdown
    assert [a["artifact_id"] for a in note["artifacts"]] == [artifact["artifact_id"]]
