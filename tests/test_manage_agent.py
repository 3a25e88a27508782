"""
Agent lifecycle while the worker runs: create, clone, stop, start, restart
and delete, the refusals, and what survives a worker restart (runtime and
native agents) - with a neighbour's run going on untouched.
"""

import json
import os
import threading
import time
from pathlib import Path

import pytest
import yaml
from conftest import Lab, hermes_worker, invoke, norfab, ok, run

WORKER = "hermes-worker-1"
LAB_AGENT = Path(__file__).resolve().parents[1] / "examples" / "lab" / "hermes" / "agents" / "interface-check.yaml"
FB_SCHEMA = {"type": "object", "properties": {"FB": {"type": "string"}}, "required": ["FB"]}
CLOCK = {
    "input_schema": FB_SCHEMA,
    "norfab": {"service": "nornir", "task": "cli", "kwargs": {"commands": ["show clock"]}},
}
SPECIALIST = {"instructions": "You are the change specialist.", "toolsets": ["norfab"], "tools": {"clock": CLOCK}}
AGENTS = {
    "steady": {"instructions": "You are STEADY.", "hermes": {"model": {"default": "alpha-model"}}},
    "filed": {"from_yaml_file": "nf://agents/filed.yaml"},
}
FILED = {"instructions": "You are FILED, version 1.", "description": "from a file"}


LAB = Lab(
    workers={WORKER: AGENTS},
    hosts=("r1",),
    files={"agents/filed.yaml": FILED, "hermes/agents/interface-check.yaml": LAB_AGENT.read_text()},
)


def manage(nf, action, agent, **kwargs):
    return run(nf.client, "manage_agent", job_timeout=90, action=action, agent=agent, **kwargs)


def agents_of(nf):
    return {a["name"]: a for a in run(nf.client, "get_agents")["result"]}


def refused_invoke(nf, agent, text):
    """An invoke expected to fail: its Result dict."""
    return run(nf.client, "invoke", job_timeout=90, agent=agent, instructions=text)


def test_a_created_agent_serves_at_once_and_calls_its_tool(lab):
    nf, _ = lab
    started = time.time()
    created = ok(manage(nf, "create", "tonight", definition=SPECIALIST))
    reply = invoke(nf, "tonight", 'CALL clock {"FB": "r1"}')
    took = time.time() - started
    assert (created["owner"], created["state"]) == ("runtime", "running")
    assert reply["tool_calls"][0]["status"] == "completed"
    assert reply["tool_calls"][0]["job_uuid"]
    listed = agents_of(nf)["tonight"]
    assert (listed["owner"], listed["state"], listed["worker"], listed["available"]) == (
        "runtime",
        "running",
        WORKER,
        True,
    )
    print(f"create -> first answer with a tool call: {took:.2f}s")


def test_create_from_the_labs_nf_file(lab):
    nf, _ = lab
    ok(manage(nf, "create", "interface-check", source="nf://hermes/agents/interface-check.yaml"))
    agent = run(nf.client, "get_agent", agent="interface-check")["result"]
    assert agent["instructions"].startswith("You check the interfaces of one device for a change window.")
    assert sorted(agent["tools"]) == ["interface_brief", "interface_detail"]
    assert not [t for t in agent["tools"].values() if t["error"]]
    reply = invoke(nf, "interface-check", 'CALL interface_brief {"FB": "r1"}')
    assert reply["tool_calls"][0]["status"] == "completed"


def test_a_clone_answers_with_its_own_model_and_not_its_sessions(lab, model):
    nf, _ = lab
    first = invoke(nf, "steady", "remember KIWI")
    override = {"hermes": {"model": {"default": "beta-model"}}}
    ok(manage(nf, "clone", "steady-beta", clone_from="steady", definition=override))
    reply = invoke(nf, "steady-beta", "who answers")
    assert reply["response"] == "ECHO: who answers"
    [request] = [r for r in model.model.completions() if "who answers" in json.dumps(r["messages"])]
    assert request["model"] == "beta-model"
    assert run(nf.client, "get_agent", agent="steady-beta")["result"]["instructions"] == "You are STEADY."
    sessions = run(nf.client, "get_sessions", agent="steady-beta")["result"]
    assert first["session_id"] not in [s["session_id"] for s in sessions]


def test_stop_refuses_runs_and_schedules_wait_then_start_serves_again(lab):
    nf, _ = lab
    ok(manage(nf, "create", "pausable", definition={"instructions": "You pause."}))
    definition = {"name": "often", "prompt": "tick", "schedule": "* * * * * */2"}
    run(nf.client, "schedule", agent="pausable", action="create", definition=definition)
    stopped = ok(manage(nf, "stop", "pausable"))
    assert stopped["state"] == "stopped"
    assert agents_of(nf)["pausable"]["state"] == "stopped"
    refused = refused_invoke(nf, "pausable", "hi")
    assert refused["failed"]
    assert "agent 'pausable' on worker" in refused["errors"][0]
    assert "is stopped" in refused["errors"][0]
    listed = run(nf.client, "schedule", agent="pausable", action="list")["result"]["schedules"][0]
    assert listed["state"] == "paused-by-stop"
    fired = len(
        run(nf.client, "schedule", agent="pausable", action="history", schedule_id="often")["result"]["history"]
    )
    time.sleep(5)
    assert (
        len(run(nf.client, "schedule", agent="pausable", action="history", schedule_id="often")["result"]["history"])
        == fired
    )
    assert ok(manage(nf, "start", "pausable"))["state"] == "running"
    assert invoke(nf, "pausable", "back")["response"] == "ECHO: back"
    deadline = time.time() + 15
    while time.time() < deadline:
        history = run(nf.client, "schedule", agent="pausable", action="history", schedule_id="often")["result"][
            "history"
        ]
        if len(history) > fired:
            break
        time.sleep(0.5)
    assert len(history) > fired, "the schedule did not fire after start"


def test_restart_picks_up_a_changed_definition(lab):
    nf, base = lab
    assert run(nf.client, "get_agent", agent="filed")["result"]["instructions"] == FILED["instructions"]
    (base / "agents" / "filed.yaml").write_text(yaml.safe_dump({**FILED, "instructions": "You are FILED, version 2."}))
    restarted = ok(manage(nf, "restart", "filed"))
    assert restarted["state"] == "running"
    assert restarted["owner"] == "inventory"
    assert run(nf.client, "get_agent", agent="filed")["result"]["instructions"] == "You are FILED, version 2."


def test_delete_removes_the_agent_its_profile_and_schedules(lab):
    nf, _ = lab
    ok(manage(nf, "create", "doomed", definition={"instructions": "You go."}))
    run(
        nf.client,
        "schedule",
        agent="doomed",
        action="create",
        definition={"name": "n", "prompt": "p", "schedule": "every 1h"},
    )
    home = run(nf.client, "get_status")["result"]["hermes_home"]
    deleted = ok(manage(nf, "delete", "doomed"))
    assert deleted["state"] == "deleted"
    assert any("1 schedule(s)" in step for step in deleted["done"])
    assert "doomed" not in agents_of(nf)
    assert not os.path.exists(f"{home}/profiles/doomed")
    gone = refused_invoke(nf, "doomed", "hi")
    assert gone["failed"]
    assert "agent 'doomed' not found" in gone["errors"][0]


@pytest.mark.parametrize(
    "action, agent, kwargs, expected",
    [
        ("create", "steady", {"definition": {"instructions": "x"}}, "'steady' already exists"),
        (
            "create",
            "Bad Name",
            {"definition": {"instructions": "x"}},
            "agent: agent name 'Bad Name' is not a valid profile name",
        ),
        ("create", "default", {"definition": {"instructions": "x"}}, "is not a valid profile name"),
        ("create", "fresh", {"definition": {"instructions": "x", "bogus": 1}}, "agent 'fresh': unknown key 'bogus'"),
        ("create", "fresh", {}, "definition: create needs an agent definition"),
        ("create", "fresh", {"source": "nf://agents/nosuch.yaml"}, "could not fetch 'nf://agents/nosuch.yaml'"),
        ("clone", "fresh", {"clone_from": "nosuch"}, "agent 'nosuch' not found"),
        ("stop", "nosuch", {}, "agent 'nosuch' not found"),
        ("delete", "steady", {}, "'steady' is defined in the worker's inventory; remove it there"),
        ("fly", "steady", {}, "field 'action'"),
    ],
)
def test_refusals_name_the_problem(lab, action, agent, kwargs, expected):
    nf, _ = lab
    res = manage(nf, action, agent, **kwargs)
    assert res["failed"], res["errors"]
    assert expected in res["errors"][0], res["errors"]
    assert "fresh" not in agents_of(nf)


def test_stop_with_a_run_in_flight_refuses_unless_interrupt(lab):
    nf, _ = lab
    ok(manage(nf, "create", "busy", definition={"instructions": "You are busy."}))
    future = nf.client.submit_job(
        "hermes", "invoke", kwargs={"agent": "busy", "instructions": "SLEEP 30"}, workers=WORKER, timeout=60
    )
    deadline = time.time() + 20
    while (
        not [r for r in run(nf.client, "get_status")["result"]["active_runs"] if r["agent"] == "busy"]
        and time.time() < deadline
    ):
        time.sleep(0.2)
    refused = manage(nf, "stop", "busy")
    assert refused["failed"]
    assert "agent 'busy' has runs in flight" in refused["errors"][0]
    assert "interrupt=true" in refused["errors"][0]
    stopped = ok(manage(nf, "stop", "busy", interrupt=True))
    assert any(step.startswith("interrupted runs") for step in stopped["done"])
    assert future.result(timeout=30)[WORKER]["result"]["stop_reason"] == "interrupted"


def test_lifecycle_actions_never_touch_a_neighbours_run(lab):
    nf, _ = lab
    outcome = {}
    neighbour = threading.Thread(
        target=lambda: outcome.update(res=invoke(nf, "steady", "SLEEP 8")),
        daemon=True,
    )
    neighbour.start()
    time.sleep(1)
    ok(manage(nf, "create", "neighbour-b", definition={"instructions": "B"}))
    ok(manage(nf, "stop", "neighbour-b"))
    ok(manage(nf, "start", "neighbour-b"))
    ok(manage(nf, "restart", "neighbour-b"))
    ok(manage(nf, "delete", "neighbour-b"))
    neighbour.join(60)
    assert outcome["res"]["stop_reason"] == "completed"
    assert outcome["res"]["response"] == "SLEPT 8"


def test_runtime_and_native_agents_are_served_after_a_restart(model, tmp_path):
    inventory = hermes_worker(model.base_url, {"steady": {"instructions": "You are STEADY."}})
    with norfab(tmp_path, {WORKER: inventory}) as nf:
        ok(manage(nf, "create", "lasting", definition={"instructions": "You last.", "description": "made at runtime"}))
        ok(manage(nf, "create", "parked", definition={"instructions": "You wait."}))
        ok(manage(nf, "stop", "parked"))
        home = run(nf.client, "get_status")["result"]["hermes_home"]
    # a profile an operator made with Hermes itself: its own config and instructions
    native = Path(home) / "profiles" / "handmade"
    native.mkdir(parents=True)
    (native / "config.yaml").write_text(
        yaml.safe_dump({"model": {"provider": "custom", "base_url": model.base_url, "default": "beta-model"}})
    )
    (native / "SOUL.md").write_text("You are HANDMADE.\n")
    with norfab(tmp_path, {WORKER: inventory}) as nf:
        listed = agents_of(nf)
        assert (listed["lasting"]["owner"], listed["lasting"]["state"]) == ("runtime", "running")
        assert listed["parked"]["state"] == "stopped"
        assert (listed["handmade"]["owner"], listed["handmade"]["state"], listed["handmade"]["model"]) == (
            "native",
            "running",
            "beta-model",
        )
        assert invoke(nf, "lasting", "still here")["response"] == "ECHO: still here"
        assert invoke(nf, "handmade", "hello hand")["response"] == "ECHO: hello hand"
    served = yaml.safe_load((native / "config.yaml").read_text())
    assert served["model"]["default"] == "beta-model"
    assert served["platform_toolsets"] == {"norfab": []}
    assert (native / "SOUL.md").read_text() == "You are HANDMADE.\n"
