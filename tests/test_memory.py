"""
Hermes' memory and skills, hosted: an agent whose definition turns them on
saves a fact in one session and is given it in a new session after a
``kill -9`` restart of its worker; another agent never sees it; what is
saved is redacted; the operator lists and clears it (the memory task); an
agent whose definition leaves them off has neither.
"""

import json
import signal

import pytest
from conftest import Lab, hermes_worker, invoke, norfab, ok, run

from norfab_hermes.testing.embedded import kill_process_group, worker_process
from norfab_hermes.testing.scenario import Scenario
from norfab_hermes.testing.scripted_model import ScriptedModel, ScriptedModelServer

WORKER = "hermes-worker-1"
FACT = "PARTNER-X on core1 recovers with clear ip bgp 10.250.0.2 once the leak is withdrawn (INC-0990)"
SECRET = "Adm1nPw0rdQ7"
SKILL = "---\nname: partner-x-recovery\ndescription: Recover the PARTNER-X peering\n---\n1. Check the prefix count.\n"
RULES = [
    {
        "match": "WHAT DO YOU REMEMBER",
        "steps": [{"say": "I remember: {{ search(system, 'PARTNER-X on core1[^\\n]*') }}"}],
    }
]
AGENTS = {
    "keeper": {"instructions": "You keep notes.", "memory": True, "skills": True},
    "stranger": {"instructions": "You are someone else.", "memory": True},
    "plain": {"instructions": "You have no memory."},
}
LAB = Lab(workers={WORKER: AGENTS})


@pytest.fixture(scope="module")
def model():
    with ScriptedModelServer(ScriptedModel(Scenario(RULES))) as server:
        yield server


def call(tool, arguments):
    return f"CALL {tool} {json.dumps(arguments)}"


def memory(nf, agent, **kwargs):
    return ok(run(nf.client, "memory", agent=agent, **kwargs))


def systems(model, text):
    """The system prompts of the model requests whose last message holds ``text``."""
    return [
        " ".join(str(m.get("content")) for m in r["messages"] if m["role"] == "system")
        for r in model.model.completions()
        if text in json.dumps(r["messages"][-1])
    ]


def test_a_fact_saved_is_recalled_after_kill_9_by_its_own_agent_only(model, tmp_path):
    with norfab(tmp_path, {WORKER: hermes_worker(model.base_url, AGENTS)}, separate=(WORKER,)) as nf:
        with worker_process(nf, WORKER) as process:
            saved = invoke(nf, "keeper", call("memory", {"action": "add", "target": "memory", "content": FACT}))
            assert saved["tool_calls"][0]["tool"] == "memory"
            assert saved["tool_calls"][0]["status"] == "completed"
            kill_process_group(process, signal.SIGKILL)

        with worker_process(nf, WORKER):
            recalled = invoke(nf, "keeper", "WHAT DO YOU REMEMBER")
            assert recalled["session_id"] != saved["session_id"]
            assert recalled["response"] == f"I remember: {FACT}"
            assert all(FACT in s for s in systems(model, "WHAT DO YOU REMEMBER")[-1:])

            other = invoke(nf, "stranger", "WHAT DO YOU REMEMBER")
            assert other["response"].strip() == "I remember:"
            assert FACT not in systems(model, "WHAT DO YOU REMEMBER")[-1]
            assert memory(nf, "stranger")["memory"] == []
            assert memory(nf, "keeper")["memory"] == [FACT]


def test_what_is_saved_is_redacted_and_the_operator_clears_it(lab, model):
    nf, base = lab
    invoke(nf, "keeper", call("memory", {"action": "add", "target": "memory", "content": f"admin password {SECRET}"}))
    invoke(nf, "keeper", call("memory", {"action": "add", "target": "user", "content": "The operator is Ana"}))
    listed = memory(nf, "keeper")
    assert "admin password ***" in listed["memory"]
    assert listed["user"] == ["The operator is Ana"]
    assert (listed["memory_on"], listed["skills_on"]) == (True, True)
    [saved] = base.rglob("profiles/keeper/memories/MEMORY.md")
    assert "admin password ***" in saved.read_text()
    assert SECRET not in saved.read_text()

    cleared = memory(nf, "keeper", action="clear", target="memory", entry="admin password")
    assert "admin password ***" not in cleared["memory"]
    assert "1 memory entry" in cleared["message"]
    assert memory(nf, "keeper", action="clear", target="user")["user"] == []
    audited = ok(run(nf.client, "get_audit", agent="keeper", kind="memory.clear"))["entries"]
    assert [(e["actor"], e["data"]["target"], e["data"].get("entry")) for e in audited] == [
        (nf.client.name, "memory", "admin password"),
        (nf.client.name, "user", None),
    ]
    invoke(nf, "keeper", "WHAT DO YOU REMEMBER now")
    assert "admin password" not in systems(model, "WHAT DO YOU REMEMBER now")[-1]
    assert "The operator is Ana" not in systems(model, "WHAT DO YOU REMEMBER now")[-1]


def test_skills_are_listed_and_cleared(nf):
    made = invoke(
        nf, "keeper", call("skill_manage", {"action": "create", "name": "partner-x-recovery", "content": SKILL})
    )
    assert made["tool_calls"][0]["status"] == "completed", made
    [skill] = memory(nf, "keeper")["skills"]
    assert (skill["name"], skill["description"]) == ("partner-x-recovery", "Recover the PARTNER-X peering")
    assert memory(nf, "keeper", action="clear", target="skills", entry="partner-x-recovery")["skills"] == []
    res = run(nf.client, "memory", agent="keeper", action="clear", target="skills", entry="partner-x-recovery")
    assert res["failed"]
    assert res["errors"][0].startswith("entry: ")
    assert "stranger" not in res["errors"][0]


def test_an_agent_without_memory_has_no_memory_tool(nf, model):
    reply = invoke(nf, "plain", call("memory", {"action": "add", "target": "memory", "content": "x"}))
    assert reply["tool_calls"] == []
    assert reply["response"].startswith("ECHO:")
    [request] = [r for r in model.model.completions() if "You have no memory." in json.dumps(r["messages"][:1])][-1:]
    assert "memory" not in {t["function"]["name"] for t in request.get("tools") or []}
    listed = memory(nf, "plain")
    assert (listed["memory_on"], listed["memory"]) == (False, [])
    res = run(nf.client, "memory", agent="plain", action="clear")
    assert res["failed"]
    assert "target" in res["errors"][0]


def test_an_agent_with_memory_is_told_to_recheck_what_it_recalls(nf, model):
    for agent in ("keeper", "plain"):
        run(nf.client, "invoke", agent=agent, instructions=f"HELLO {agent}")
    [keeper] = systems(model, "HELLO keeper")[-1:]
    [plain] = systems(model, "HELLO plain")[-1:]
    assert "Re-check every recalled fact against current device output" in keeper
    assert "recalled fact" not in plain
