"""
A fleet: hermes-worker-1 next to the broker, hermes-worker-2 as an OS process
of its own started from a worker-only inventory in its own folder (inside a
network namespace across a veth pair where the machine allows it), a nornir
worker over FakeNOS. Agents ask each other through delegates, bounded by
budget, depth and lineage; a dead worker's sessions are an error naming it
until it comes back.
"""

import contextlib
import os
import re
import signal
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import pytest
from conftest import hermes_shell, hermes_worker, invoke, network, network_jobs, norfab, ok, run, start_invoke
from test_shell import nfcli

from norfab_hermes.routing import Hermes, RoutingError
from norfab_hermes.testing.embedded import kill_process_group, remote_worker, wait_until_gone
from norfab_hermes.testing.netns import Namespace, NamespaceUnavailable, veth_namespace
from norfab_hermes.testing.scenario import Scenario
from norfab_hermes.testing.scripted_model import ScriptedModel, ScriptedModelServer

W1, W2 = "hermes-worker-1", "hermes-worker-2"
SCENARIO = Scenario(
    [
        {
            "match": r"(?i)ask routing about (?P<host>r\d+)",
            "steps": [
                {"call": "ask_routing", "args": {"question": "What time is it on {{ host }}?"}},
                {"say": "Routing answered: {{ lines(result('ask_routing'), ' UTC ')[0] }}"},
            ],
        },
        {
            "match": r"(?i)what time is it on (?P<host>r\d+)",
            "steps": [
                {"call": "show_clock", "args": {"FB": "{{ host }}"}},
                {"say": "{{ host }}: {{ grep('show_clock', ' UTC ')[0] }}"},
            ],
        },
        {
            "match": r"(?i)clock, then split the work on (?P<host>r\d+)",
            "steps": [
                {"call": "show_clock", "args": {"FB": "{{ host }}"}},
                {"call": "delegate_task", "args": {"goal": "What time is it on {{ host }}?"}},
                {"say": "lead: {{ result('delegate_task') }}"},
            ],
        },
        {
            "match": r"(?i)split the work on (?P<host>r\d+)",
            "steps": [
                {"call": "delegate_task", "args": {"goal": "What time is it on {{ host }}?"}},
                {"say": "lead: {{ result('delegate_task') }}"},
            ],
        },
        {
            "match": r"(?i)get (?P<host>r\d+) fixed",
            "steps": [
                {"call": "ask_fixer", "args": {"question": "Fix {{ host }}"}},
                {"say": "{{ result('ask_fixer') }}"},
            ],
        },
        {
            "match": r"(?i)^fix (?P<host>r\d+)",
            "steps": [
                {"call": "clear_counters", "args": {"FB": "{{ host }}"}},
                {"say": "fixer: {{ result('clear_counters') }}"},
            ],
        },
        {
            "match": r"(?i)pass it on",
            "steps": [
                {"call": "ask_peer", "args": {"question": "pass it on"}},
                {"say": "peer: {{ result('ask_peer') }}"},
            ],
        },
    ]
)
SHOW_CLOCK = {
    "input_schema": {"type": "object", "properties": {"FB": {"type": "string"}}, "required": ["FB"]},
    "norfab": {"service": "nornir", "task": "cli", "kwargs": {"commands": ["show clock"]}},
}

CLEAR_COUNTERS = {
    **SHOW_CLOCK,
    "approval": True,
    "norfab": {"service": "nornir", "task": "cli", "kwargs": {"commands": ["show users"]}},
}


def delegate(agent, worker, **extra):
    return {
        "toolsets": ["norfab"],
        "delegates": {extra.pop("tool", "ask_peer"): {"agent": agent, "workers": worker}},
        **extra,
    }


W1_AGENTS = {
    "interfaces": {
        "instructions": "You check interfaces.",
        "run_timeout": 60,
        "toolsets": ["norfab"],
        "delegates": {
            "ask_routing": {"agent": "routing", "workers": W2},
            "ask_fixer": {"agent": "fixer", "workers": W2},
        },
    },
    "triage": {"instructions": "You triage.", **delegate("core", W2, max_delegation_depth=5)},
    "hop1": {"instructions": "Hop 1.", **delegate("hop2", W2)},
    "hop3": {"instructions": "Hop 3.", **delegate("hop4", W2)},
    "edge": {"instructions": "You are EDGE."},
    # Hermes' own subagents, inside one profile
    "lead": {
        "instructions": "You lead.",
        "toolsets": ["norfab", "delegation"],
        "tools": {"show_clock": SHOW_CLOCK},
        "max_tool_calls": 1,
    },
}
W2_AGENTS = {
    "routing": {"instructions": "You explain routing.", "toolsets": ["norfab"], "tools": {"show_clock": SHOW_CLOCK}},
    "core": {"instructions": "You are CORE.", **delegate("triage", W1, max_delegation_depth=5)},
    "hop2": {"instructions": "Hop 2.", **delegate("hop3", W1)},
    "hop4": {"instructions": "Hop 4."},
    "fixer": {"instructions": "You fix.", "toolsets": ["norfab"], "tools": {"clear_counters": CLEAR_COUNTERS}},
}


@dataclass
class Fleet:
    nf: Any
    base: Path
    process: Any
    namespace: Optional[Namespace]
    no_namespace: str  # why there is none


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    base = tmp_path_factory.mktemp("fleet")
    with contextlib.ExitStack() as stack:
        try:
            namespace, why = stack.enter_context(veth_namespace()), ""
        except NamespaceUnavailable as error:
            namespace, why = None, str(error)
        address = namespace.host_address if namespace else "127.0.0.1"
        model = stack.enter_context(ScriptedModelServer(ScriptedModel(scenario=SCENARIO), host=address))
        workers, files = network(["r1"], users={W1: hermes_worker(model.base_url, W1_AGENTS)})
        workers[W2] = hermes_worker(model.base_url, W2_AGENTS)
        nf = stack.enter_context(norfab(base, workers, files, separate=(W2,), address=address))
        prefix = namespace.prefix if namespace else ()
        process = stack.enter_context(remote_worker(nf, W2, base / "core-host", prefix=prefix))
        yield Fleet(nf, base, process, namespace, why)


def sessions(nf, worker, agent):
    return {s["session_id"] for s in ok(run(nf.client, "get_sessions", worker=worker, agent=agent))}


def test_the_second_worker_is_a_process_of_its_own_started_from_its_own_folder(fleet):
    status = {w: ok(run(fleet.nf.client, "get_status", worker=w)) for w in (W1, W2)}
    # nfcli starts the worker as its child, in the process group the test started
    assert os.getpgid(status[W2]["pid"]) == fleet.process.pid
    assert os.getpgid(status[W1]["pid"]) != fleet.process.pid
    assert status[W2]["hermes_home"].startswith(str(fleet.base / "core-host")), status[W2]["hermes_home"]
    assert set(status[W2]["agents"]) == set(W2_AGENTS), status[W2]
    assert all(status[W2]["agents"].values()), status[W2]


def test_a_delegated_question_returns_the_other_agents_finding_with_its_lineage(fleet):
    nf = fleet.nf
    future, run_id = start_invoke(nf.client, W1, agent="interfaces", instructions="Ask routing about r1")
    events = [e["message"] for e in future.events(timeout=90)]
    result = ok(future.result(timeout=30)[W1])

    assert re.match(r"Routing answered: r1: \*?[\d:.]+ UTC \w+ ", result["response"]), result["response"]
    [call] = result["tool_calls"]
    child = call["delegated"]
    assert (call["tool"], call["service"], call["task"], call["workers"], call["status"]) == (
        "ask_routing",
        "hermes",
        "invoke",
        W2,
        "completed",
    )
    assert child["agent"] == "routing"
    assert child["worker"] == W2
    assert child["stop_reason"] == "completed"
    assert child["run_id"]
    assert child["session_id"]
    assert call["job_uuid"]
    # the child's progress showed in the parent's job events, as it happened
    assert f"delegate ask_routing asking agent 'routing' on {W2}" in events
    assert f"routing@{W2}: run {child['run_id']} started on agent 'routing'" in events
    assert any(m.startswith(f"routing@{W2}: tool show_clock completed") for m in events), events
    # the child ran on worker 2, reached the device, and knows who asked
    asked = ok(run(nf.client, "get_run", worker=W2, agent="routing", run_id=child["run_id"]))["result"]
    assert asked["lineage"] == {
        "parent_run_id": run_id,
        "root_run_id": run_id,
        "depth": 1,
        "chain": [f"interfaces@{W1}"],
    }
    assert asked["session_id"] == child["session_id"]
    assert asked["response"] in result["response"]
    assert any(kwargs.get("commands") == ["show clock"] for _, kwargs in network_jobs(fleet.base))


def test_a_delegated_run_works_on_the_callers_case(fleet):
    nf = fleet.nf
    parent = invoke(nf, "interfaces", "Ask routing about r1", worker=W1, case_id="INC-77")
    child = parent["tool_calls"][0]["delegated"]
    [asked] = ok(run(nf.client, "get_runs", W2, case_id="INC-77"))["runs"]
    assert (asked["run_id"], asked["parent_run_id"], asked["case_id"]) == (child["run_id"], parent["run_id"], "INC-77")


def test_the_depth_limit_refuses_before_anything_is_sent(fleet):
    nf = fleet.nf
    hop4_before = sessions(nf, W2, "hop4")
    result = invoke(nf, "hop1", "pass it on", worker=W1)
    # hop1@w1 -> hop2@w2 -> hop3@w1, whose question would be a third level (default max_delegation_depth 2)
    assert "delegation depth limit reached: this run is 2 deep and agent 'hop3' allows 2" in result["response"]
    assert result["tool_calls"][0]["delegated"]["agent"] == "hop2"
    assert result["stop_reason"] == "completed"
    assert sessions(nf, W2, "hop4") == hop4_before, "hop4 was asked past the depth limit"


def test_a_cycle_is_refused_before_dispatch_and_by_the_asked_worker(fleet):
    nf = fleet.nf
    triage_before = sessions(nf, W1, "triage")
    result = invoke(nf, "triage", "pass it on", worker=W1)
    assert (
        f"asking triage@{W1} would go round in a circle (triage@{W1} -> core@{W2} -> triage@{W1})" in result["response"]
    )
    assert len(sessions(nf, W1, "triage") - triage_before) == 1, "triage was asked again inside its own lineage"
    # a caller that forges a lineage around the checks meets the asked worker's own check
    forged = {"parent_run_id": "x", "root_run_id": "x", "depth": 1, "chain": [f"core@{W2}"]}
    res = run(nf.client, "invoke", worker=W2, agent="core", instructions="hello", lineage=forged)
    assert res["failed"]
    assert "a delegation cycle is refused" in res["errors"][0]


def test_finding_4_a_lineage_is_the_asking_workers_word_not_the_callers(fleet):
    nf = fleet.nf
    edge_before = sessions(nf, W1, "edge")
    # a parent run that never existed
    forged = {"parent_run_id": "nope", "root_run_id": "nope", "depth": 1, "chain": [f"routing@{W2}"]}
    res = run(nf.client, "invoke", worker=W1, agent="edge", instructions="hello", lineage=forged)
    assert res["failed"], res
    assert f"run 'nope' of agent 'routing' is not known on worker '{W2}'" in res["errors"][0], res
    # a real run, whose agent never asked: routing has no delegate for edge
    future, run_id = start_invoke(nf.client, W2, agent="routing", instructions="SLEEP 6")
    forged = {"parent_run_id": run_id, "root_run_id": run_id, "depth": 1, "chain": [f"routing@{W2}"]}
    res = run(nf.client, "invoke", worker=W1, agent="edge", instructions="hello", lineage=forged)
    assert res["failed"], res
    assert f"has no delegate for agent 'edge' on worker '{W1}'" in res["errors"][0], res
    future.result(timeout=60)
    assert sessions(nf, W1, "edge") == edge_before, "a run was made for the forged lineage"
    log = (fleet.base / "__norfab__" / "logs" / f"worker-{W1}.jsonl").read_text()
    assert log.count("Refused a run of 'edge'") >= 2, "the refusals were not recorded in the worker log"


def test_the_asked_agents_approval_goes_to_the_callers_operator_and_only_to_one(fleet):
    nf = fleet.nf

    def cleared():
        return len([k for _, k in network_jobs(fleet.base) if k.get("commands") == ["show users"]])

    before = cleared()
    future = nf.client.submit_job(
        "hermes",
        "invoke",
        kwargs={"agent": "interfaces", "instructions": "Get r1 fixed", "interactive": True},
        workers=W1,
        timeout=120,
    )
    questions = []
    for event in future.events(timeout=60):
        request = (event.get("extras") or {}).get("input_request")
        if event.get("event_type") == "input_request" and request:
            questions.append(request["question"])
            assert cleared() == before, "the call ran before the operator answered"
            future.send_response(input_id=request["id"], value=True, worker=W1)
    result = ok(future.result(timeout=30)[W1])
    [question] = questions
    # a change: its devices and digest head the question, which ends as every approval does
    assert question.startswith(f"[fixer on {W2}, asked by interfaces] Change ")
    assert " on r1." in question
    assert question.endswith(
        """Agent 'fixer' wants to run tool clear_counters (nornir.cli) with {"FB": "r1"}. Allow?"""
    )
    assert '"ok": true' in result["response"]
    assert cleared() == before + 1

    # a caller nobody answers for: the asked run is not interactive either, and its agent names no
    # approvers, so its change never runs
    result = invoke(nf, "interfaces", "Get r1 fixed", worker=W1)
    refusal = "a delegated run reaches a change only through the approval inbox with a named approver"
    assert refusal in result["response"], result["response"]
    assert cleared() == before + 1


def test_the_child_gets_less_than_the_parents_remaining_budget_and_stops_before_it(fleet):
    nf = fleet.nf
    result = invoke(nf, "interfaces", 'CALL ask_routing {"question": "SLEEP 60"}', timeout=25, worker=W1)
    [call] = result["tool_calls"]
    assert call["delegated"]["stop_reason"] == "run_timeout"
    assert call["status"] == "failed"
    assert "stopped without finishing: run_timeout" in call["error"]
    assert call["duration"] < 25 - 3, f"the child ran {call['duration']}s of the parent's 25 s"
    # the parent's own budget did not run out: it ended after its child, on its own
    assert result["stop_reason"] == "completed", result["stop_reason"]


def test_interrupting_the_parent_interrupts_the_child(fleet):
    nf = fleet.nf
    future, run_id = start_invoke(
        nf.client, W1, agent="interfaces", instructions='CALL ask_routing {"question": "SLEEP 60"}'
    )
    child_id = None
    for event in future.events(timeout=60):
        found = re.match(rf"routing@{W2}: run (\w+) started", event["message"])
        if found:
            child_id = found.group(1)
            break
    assert child_id, "the child run never started"
    ok(run(nf.client, "interrupt", worker=W1, agent="interfaces", run_id=run_id))
    result = ok(future.result(timeout=40)[W1])  # the child's model holds its turn for 60 s
    assert result["stop_reason"] == "interrupted"
    child = ok(run(nf.client, "get_run", worker=W2, agent="routing", run_id=child_id))
    assert child["state"] == "finished", child
    assert child["stop_reason"] == "interrupted", child


def test_concurrent_load_across_both_workers_without_cross_talk(fleet):
    nf = fleet.nf
    hermes = Hermes(nf.client)
    replies = {}

    def ask(key, agent, worker, text):
        replies[key] = hermes.invoke(agent, text, workers=worker)

    jobs = [(f"w1-{i}", "edge", W1, f"token-w1-{i}") for i in range(3)]
    jobs += [(f"w2-{i}", "hop4", W2, f"token-w2-{i}") for i in range(3)]
    jobs += [(f"d-{i}", "interfaces", W1, f'CALL ask_routing {{"question": "token-d-{i}"}}') for i in range(2)]
    threads = [threading.Thread(target=ask, args=job) for job in jobs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    for key, agent, worker, text in jobs:
        result = ok(replies[key])
        assert result["worker"] == worker
        assert result["agent"] == agent
        tokens = set(re.findall(r"token-[\w-]+", result["response"]))
        assert tokens == {f"token-{key}"}, (key, result["response"])


def test_hermes_native_subagents_work_inside_the_run_and_its_budgets(fleet):
    nf = fleet.nf
    clocks = len([k for _, k in network_jobs(fleet.base) if k.get("commands") == ["show clock"]])
    future, run_id = start_invoke(nf.client, W1, agent="lead", instructions="Split the work on r1")
    events = [e["message"] for e in future.events(timeout=60)]
    result = ok(future.result(timeout=30)[W1])
    # the subagent ran within the turn (not in the background, after the run) and its tool call is the run's
    assert re.search(r'"summary": "r1: \*?[\d:.]+ UTC', result["response"])
    assert '"mode": "background"' not in result["response"]
    assert [(c["tool"], c["status"]) for c in result["tool_calls"]] == [
        ("show_clock", "completed"),
        ("delegate_task", "completed"),
    ]
    assert result["tool_calls"][0]["job_uuid"]
    assert "tool show_clock calling nornir.cli" in events
    assert len([m for m in events if m.startswith("model request")]) == 4  # the subagent's model calls count too

    # lead may make one NorFab call per run: with its own made, its subagent's is refused, not sent
    result = invoke(nf, "lead", "Clock, then split the work on r1", worker=W1)
    calls = [(c["tool"], c["status"], c["error"]) for c in result["tool_calls"]]
    assert calls[:2] == [
        ("show_clock", "completed", None),
        ("show_clock", "refused", "the run's budget of 1 tool calls is spent; the call was not made"),
    ]
    assert result["stop_reason"] == "tool_budget"
    after = len([k for _, k in network_jobs(fleet.base) if k.get("commands") == ["show clock"]])
    assert after - clocks == 2, "a subagent's call went past the run's tool budget"


def test_the_shell_shows_both_workers_and_chat_switches_across_processes(fleet):
    nf = fleet.nf
    with hermes_shell(nf) as app:
        out = nfcli(app, "hermes agents")
        assert re.search(rf"{W1}\s+│\s+interfaces\s+│\s+yes", out), out
        assert re.search(rf"{W2}\s+│\s+routing\s+│\s+yes", out), out
        out = nfcli(app, "hermes status")
        assert re.search(rf"{W1}\s+│\s+yes", out), out
        assert re.search(rf"{W2}\s+│\s+yes", out), out
        out = nfcli(app, f'hermes invoke interfaces "Ask routing about r1" workers {W1}')
        assert f"invoking agent 'interfaces' on worker '{W1}'" in out
        assert re.search(rf"INFO +routing@{W2}: tool show_clock completed", out), out  # the child's progress, live
        assert re.search(
            rf"tool ask_routing hermes.invoke completed in [\d.]+s job \w+ -> routing@{W2} run \w+ session \w+", out
        ), out
        prompts = []
        out = nfcli(
            app, "hermes chat edge", ["hello edge", f"/agent hop4 workers {W2}", "hello hop4", "/exit"], prompts
        )
    assert prompts == [f"{W1}/edge> "] * 2 + [f"{W2}/hop4> "] * 2
    assert "ECHO: hello edge" in out
    assert "ECHO: hello hop4" in out


def test_the_second_worker_reaches_the_broker_across_a_real_interface(fleet):
    if fleet.namespace is None:
        pytest.skip(f"no network namespace on this machine ({fleet.no_namespace}); the worker ran on 127.0.0.1")
    ours = os.readlink("/proc/self/ns/net")
    assert os.readlink(f"/proc/{fleet.process.pid}/ns/net") != ours
    before = fleet.namespace.bytes_received()
    invoke(fleet.nf, "interfaces", "Ask routing about r1", worker=W1)
    assert fleet.namespace.bytes_received() - before > 2000  # the child's events and result crossed the veth pair


def test_a_dead_owner_is_named_other_workers_serve_and_it_comes_back_with_its_sessions(fleet):
    nf = fleet.nf
    hermes = Hermes(nf.client)
    first = ok(hermes.invoke("routing", "remember ALPHA-7", workers=W2))
    session_id = first["session_id"]
    schedule = {"name": "nightly", "prompt": "What time is it on r1?", "schedule": "0 3 * * *"}
    ok(run(nf.client, "schedule", worker=W2, agent="routing", action="create", definition=schedule))

    kill_process_group(fleet.process, signal.SIGKILL)
    wait_until_gone(nf.client, W2)
    with pytest.raises(RoutingError, match=rf"hermes worker '{W2}' is (dead|not registered)"):
        hermes.invoke("routing", "and then?", session_id=session_id, workers=W2)
    with pytest.raises(
        RoutingError, match=rf"agent 'routing' not found.*session '{session_id}' belongs to hermes worker '{W2}'"
    ):
        hermes.invoke("routing", "and then?", session_id=session_id)
    assert ok(hermes.invoke("edge", "still here?", workers=W1))["response"] == "ECHO: still here?"
    refused = invoke(nf, "interfaces", 'CALL ask_routing {"question": "anyone?"}', worker=W1)
    assert refused["tool_calls"][0]["status"] == "failed"
    assert f"on {W2} did not answer" in refused["tool_calls"][0]["error"]

    prefix = fleet.namespace.prefix if fleet.namespace else ()
    with remote_worker(nf, W2, fleet.base / "core-host", prefix=prefix):
        again = ok(hermes.invoke("routing", "what did I ask you to remember?", session_id=session_id))
        assert again["worker"] == W2
        assert again["session_id"] == session_id
        messages = ok(run(nf.client, "get_session", worker=W2, agent="routing", session_id=session_id))["messages"]
        assert [m["content"] for m in messages if m["role"] == "user"] == [
            "remember ALPHA-7",
            "what did I ask you to remember?",
        ]
        schedules = ok(run(nf.client, "schedule", worker=W2, agent="routing", action="list"))["schedules"]
        assert [(s["name"], s["state"]) for s in schedules] == [("nightly", "scheduled")]
