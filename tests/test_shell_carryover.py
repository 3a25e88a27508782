"""
The nf# commands of work that carries over, through NorFab's real nfcli
shell: an agent's memory listed and cleared, a run's evidence and one
artifact whole, an incident note written with its artifacts, a shift
handover across two hermes workers; tables fit 80 columns.
"""

import json
import re

import pytest
from conftest import Lab, hermes_shell, last_job, run
from test_shell import fits, nfcli, terminal_width

from norfab_hermes.testing.scenario import Scenario
from norfab_hermes.testing.scripted_model import ScriptedModel, ScriptedModelServer

LAB1, LAB2 = "hermes-lab-1", "hermes-lab-2"
FB = {"type": "object", "properties": {"FB": {"type": "string"}}, "required": ["FB"]}
CLOCK = {"input_schema": FB, "norfab": {"service": "nornir", "task": "cli", "kwargs": {"commands": ["show clock"]}}}
QUOTE = "Verdict: clock read\n```\n{% for line in grep('clock', 'UTC') %}{{ line }}\n{% endfor %}```"
RULES = [
    {"match": "QUOTE THE CLOCK", "steps": [{"call": "clock", "args": {"FB": "r1"}}, {"say": QUOTE}]},
    {
        "match": "(?i)hand over the unresolved",
        "steps": [{"say": "Briefing: {{ lines(message, '^### ') | join(' / ') }}"}],
    },
]
KEEPER = {"instructions": "You keep notes.", "memory": True, "toolsets": ["norfab"], "tools": {"clock": CLOCK}}


LAB = Lab(
    workers={
        LAB1: {"keeper": KEEPER, "noc": {"instructions": "You hand over."}},
        LAB2: {"routing": {**KEEPER, "memory": False}},
    },
    hosts=("r1",),
)


@pytest.fixture(scope="module")
def model():
    with ScriptedModelServer(ScriptedModel(Scenario(RULES))) as server:
        yield server


@pytest.fixture(scope="module")
def app(nf):
    with hermes_shell(nf) as shell:
        yield shell


def test_memory_is_listed_and_cleared(nf, app, tmp_path):
    fact = "core1 recovers with clear ip bgp 10.250.0.2"
    add = json.dumps({"action": "add", "target": "memory", "content": fact})
    assert not run(nf.client, "invoke", LAB1, job_timeout=120, agent="keeper", instructions=f"CALL memory {add}")[
        "failed"
    ]
    with terminal_width(80):
        out = fits(nfcli(app, "hermes memory keeper"))
    assert f"agent 'keeper' on worker '{LAB1}' (memory on, skills off): listed" in out
    assert "core1 recovers" in out
    out = nfcli(app, 'hermes memory keeper clear memory entry "clear ip bgp"')
    assert "1 memory entry of agent 'keeper' forgotten" in out
    assert "core1 recovers" not in out
    assert last_job(nf.client, "memory")["kwargs"] == {
        "agent": "keeper",
        "action": "clear",
        "target": "memory",
        "entry": "clear ip bgp",
    }
    assert "(memory off, skills off)" in nfcli(app, "hermes memory routing")
    assert "entry goes with clear" in nfcli(app, 'hermes memory keeper entry "x"')


def test_an_invoke_points_at_its_evidence(nf, app):
    out = nfcli(app, 'hermes invoke keeper "QUOTE THE CLOCK"')
    run_id = re.search(r"run ([0-9a-f]{12})", out).group(1)
    assert f"1 tool result(s) kept whole as evidence: hermes evidence keeper {run_id} workers {LAB1}" in " ".join(
        out.split()
    )


def test_evidence_and_the_incident_note(nf, app, tmp_path):
    reply = run(nf.client, "invoke", LAB1, job_timeout=120, agent="keeper", instructions="QUOTE THE CLOCK")["result"]
    [artifact] = reply["artifacts"]
    with terminal_width(80):
        out = fits(nfcli(app, f"hermes evidence keeper {reply['run_id']}"))
    assert artifact["artifact_id"] in out
    assert "clock" in out
    out = nfcli(app, f"hermes evidence keeper {reply['run_id']} {artifact['artifact_id']}")
    assert artifact["sha256"] in out
    assert re.search(r"\d\d:\d\d:\d\d\.\d+ UTC", out)

    out = nfcli(app, f"hermes report keeper {reply['session_id']} output {tmp_path}")
    assert "1 of 1 quoted line(s) linked to an artifact and its digest" in out
    note = (tmp_path / f"incident-{reply['session_id']}.md").read_text()
    assert f"(artifacts/{artifact['artifact_id']}.txt)" in note
    assert artifact["sha256"] in note
    kept = (tmp_path / "artifacts" / f"{artifact['artifact_id']}.txt").read_text()
    assert (
        kept
        == run(nf.client, "evidence", LAB1, agent="keeper", artifact_id=artifact["artifact_id"])["result"]["artifact"][
            "text"
        ]
    )
    assert "evidence takes the agent and the run id" in nfcli(app, "hermes evidence keeper")


def test_handover_across_both_workers(nf, app, tmp_path):
    run(nf.client, "invoke", LAB2, job_timeout=120, agent="routing", instructions='CALL clock {"FB": "r1"}')
    out = nfcli(app, "hermes handover noc since 1h")
    assert f"written by noc@{LAB1}" in out
    assert f"{LAB2}: 1 session(s)" in out
    assert "Briefing: ### Session" in out
    assert "of agent routing on hermes-lab-2" in " ".join(out.split())
    briefing = tmp_path / "handover.md"
    out = nfcli(app, f'hermes handover noc only "routing" output {briefing}')
    assert f"briefing written to {briefing}" in out
    assert f"{LAB1}: 0 session(s)" in out
    assert "agent routing on hermes-lab-2" in briefing.read_text()
    assert last_job(nf.client, "handover")["kwargs"]["agents"] == ["routing"]
