"""
invoke through a real NorFab: broker, one hermes worker with two agents
(native Hermes profiles) and the scripted model.
"""

import time
import uuid

import pytest
from conftest import Lab, run

SECRET = "sk-norfab-test-" + uuid.uuid4().hex
WORKER = "hermes-worker-1"


AGENTS = {
    "alpha": {
        "instructions": "You are ALPHA, the interface checker.",
        "description": "checks interfaces",
        "hermes": {"model": {"default": "alpha-model", "api_key_env": "NF_TEST_API_KEY"}},
    },
    "beta": {
        "instructions": "You are BETA, the routing checker.",
        "hermes": {"model": {"default": "beta-model"}},
        "run_timeout": 3,
    },
    "gamma": {"instructions": "You are GAMMA.", "hermes": {"agent": {"api_max_retries": 1}}},
    "broken": {"instructions": "never served", "bogus": 1},
}
LAB = Lab(workers={WORKER: AGENTS}, env={"NF_TEST_API_KEY": SECRET})


def request_with(model, token):
    """The agent-turn request the scripted model received whose last user message has ``token``."""
    for body in model.model.completions():
        users = [m for m in body["messages"] if m["role"] == "user"]
        if users and token in str(users[-1]["content"]):
            return body
    raise AssertionError(f"no model request carried {token!r}")


def test_each_agent_gets_its_own_model_and_instructions(nf, model):
    for agent, model_id, persona in [("alpha", "alpha-model", "ALPHA"), ("beta", "beta-model", "BETA")]:
        token = uuid.uuid4().hex[:8]
        res = run(nf.client, "invoke", agent=agent, instructions=f"hello {token}")
        assert not res["failed"], res["errors"]
        data = res["result"]
        assert data["response"] == f"ECHO: hello {token}"
        assert (data["agent"], data["worker"], data["stop_reason"]) == (agent, WORKER, "completed")
        assert data["usage"]["api_calls"] == 1
        assert data["usage"]["total_tokens"] > 0
        body = request_with(model, token)
        assert body["model"] == model_id
        assert body["messages"][0]["content"].startswith(f"You are {persona}")


def test_an_agent_never_sends_another_agents_key(nf, model):
    """Agents of one worker share a process, not their provider keys: beta names no key and sends none of alpha's."""
    token = uuid.uuid4().hex[:8]
    assert not run(nf.client, "invoke", agent="beta", instructions=f"whose key {token}")["failed"]
    sent = [r["authorization"] for r in model.model.requests if token in str(r["body"])]
    assert sent, sent
    assert not any(SECRET in str(a) for a in sent), sent


def test_session_continues_and_a_new_invoke_starts_fresh(nf, model):
    first = run(nf.client, "invoke", agent="alpha", instructions="remember PINEAPPLE")["result"]
    second = run(nf.client, "invoke", agent="alpha", instructions="and now 2nd", session_id=first["session_id"])
    second = second["result"]
    assert second["session_id"] == first["session_id"]
    history = str(request_with(model, "and now 2nd")["messages"])
    assert "remember PINEAPPLE" in history
    assert "ECHO: remember PINEAPPLE" in history

    fresh = run(nf.client, "invoke", agent="alpha", instructions="fresh 3rd")["result"]
    assert fresh["session_id"] != first["session_id"]
    assert "PINEAPPLE" not in str(request_with(model, "fresh 3rd")["messages"])


def test_session_of_one_agent_cannot_be_continued_through_another(nf):
    alpha = run(nf.client, "invoke", agent="alpha", instructions="alpha only")["result"]
    res = run(nf.client, "invoke", agent="beta", instructions="steal", session_id=alpha["session_id"])
    assert res["failed"]
    assert f"session '{alpha['session_id']}' not found for agent 'beta'" in res["errors"][0]


def test_run_timeout_stops_a_slow_model(nf):
    res = run(nf.client, "invoke", agent="beta", instructions="SLEEP 30")
    data = res["result"]
    assert data["stop_reason"] == "run_timeout"
    # the session stays usable after the timeout
    after = run(nf.client, "invoke", agent="beta", instructions="still there?", session_id=data["session_id"])
    assert after["result"]["stop_reason"] == "completed"


@pytest.mark.parametrize("budget", ["run_timeout", "timeout"])  # timeout: the deprecated name, still accepted
def test_a_run_budget_argument_shortens_the_budget(nf, budget):
    res = run(nf.client, "invoke", agent="alpha", instructions="SLEEP 30", **{budget: 1})
    assert res["result"]["stop_reason"] == "run_timeout"


def test_invalid_agent_definition_is_reported_by_name_and_field(nf):
    status = run(nf.client, "get_status")["result"]
    assert status["ready"] is False
    assert status["agents"] == {"alpha": True, "beta": True, "broken": False, "gamma": True}
    assert any("agent 'broken': unknown key 'bogus'" in error for error in status["errors"])
    res = run(nf.client, "invoke", agent="broken", instructions="hi")
    assert res["failed"]
    assert "unknown key 'bogus'" in res["errors"][0]


def test_unknown_agent_lists_the_known_ones(nf):
    res = run(nf.client, "invoke", agent="delta", instructions="hi")
    assert res["failed"]
    assert res["errors"] == [f"agent 'delta' not found on worker '{WORKER}'; known agents: alpha, beta, gamma"]


def test_slash_commands_are_not_instructions(nf):
    res = run(nf.client, "invoke", agent="alpha", instructions="/restart")
    assert res["failed"]
    assert "use the command task" in res["errors"][0]


def test_get_agents_and_get_agent(nf):
    agents = {a["name"]: a for a in run(nf.client, "get_agents")["result"]}
    assert agents["alpha"]["description"] == "checks interfaces"
    assert agents["beta"]["description"] == "beta"
    assert (agents["alpha"]["model"], agents["alpha"]["available"]) == ("alpha-model", True)
    assert agents["broken"]["available"] is False

    alpha = run(nf.client, "get_agent", agent="alpha")["result"]
    assert alpha["instructions"] == "You are ALPHA, the interface checker."
    assert alpha["run_timeout"] == 300
    assert alpha["max_turns"] == 20
    config = alpha["config"]
    assert config["platform_toolsets"] == {"norfab": []}
    assert config["security"]["tirith_enabled"] is False
    assert config["providers"]["custom"]["key_env"] == "NF_TEST_API_KEY"


def test_api_keys_never_leave_the_worker(nf, model):
    token = uuid.uuid4().hex[:8]
    future = nf.client.submit_job("hermes", "invoke", kwargs={"agent": "alpha", "instructions": token}, workers=WORKER)
    events = list(future.events(timeout=60))
    result = future.result(timeout=60)
    # the key did reach the model provider, from the worker's memory (no file holds it)
    authorization = [r["authorization"] for r in model.model.requests if token in str(r["body"])]
    assert authorization
    assert all(a == f"Bearer {SECRET}" for a in authorization)
    returned = [
        result,
        events,
        run(nf.client, "get_inventory"),
        run(nf.client, "get_agent", agent="alpha"),
        run(nf.client, "get_agents"),
        run(nf.client, "get_status"),
    ]
    assert SECRET not in str(returned)
    assert "NF_TEST_API_KEY" in str(run(nf.client, "get_inventory")["result"])


def test_progress_becomes_lowercase_job_events_starting_with_the_run_id(nf):
    future = nf.client.submit_job(
        "hermes", "invoke", kwargs={"agent": "alpha", "instructions": "events"}, workers=WORKER
    )
    events = [e for e in future.events(timeout=60) if e.get("event_type") == "progress" and e.get("task") == "invoke"]
    result = future.result(timeout=60)[WORKER]["result"]
    messages = [e["message"] for e in events if e["message"] != "starting"]
    assert messages[0] == f"run {result['run_id']} started on agent 'alpha'"
    assert events[1]["extras"]["run_id"] == result["run_id"]
    assert "model request 1 started" in messages
    assert messages[-1] == f"run {result['run_id']} completed"
    assert all(m[0].islower() for m in messages)


def test_the_reply_streams_as_batched_events_that_add_up_to_the_response(nf, model):
    future = nf.client.submit_job(
        "hermes", "invoke", kwargs={"agent": "alpha", "instructions": "STREAM 40 0.05"}, workers=WORKER
    )
    events = [(time.time(), e) for e in future.events(timeout=60) if e.get("event_type") == "progress"]
    result = future.result(timeout=60)[WORKER]["result"]
    replies = [(seen, e["extras"]["reply"]) for seen, e in events if (e.get("extras") or {}).get("reply")]
    ended = next(seen for seen, e in events if e["message"] == f"run {result['run_id']} completed")
    # the words came over 2 s; the caller saw them as they came, a few per event, then the run ended
    assert "".join(r["delta"] for _, r in replies) == result["response"] == " ".join(f"word{i}" for i in range(40))
    assert {r["segment"] for _, r in replies} == {1}
    assert not any(r["replace"] for _, r in replies)
    assert 3 <= len(replies) <= 15, [r["delta"] for _, r in replies]
    assert replies[0][0] < ended - 1.0
    assert replies[0][0] - model.model.first_tokens[-1] < 0.5
    assert all(e["message"] == "reply" for _, e in events if (e.get("extras") or {}).get("reply"))


def test_get_run_shows_the_reply_as_far_as_it_got(nf):
    accepted = run(nf.client, "start_run", agent="alpha", instructions="STREAM 40 0.05")["result"]
    deadline, seen = time.time() + 30, []
    while time.time() < deadline:
        state = run(nf.client, "get_run", agent="alpha", run_id=accepted["run_id"])["result"]
        if state["state"] == "finished":
            break
        seen.append(state["reply"])
        time.sleep(0.1)
    response = state["result"]["response"]
    partial = [text for text in seen if text and text != response]
    assert partial, seen
    assert all(text.startswith("word0 ") and response.startswith(text) for text in partial), seen
    assert not any(e["message"] == "reply" for e in state["events"])


def test_run_shell_cmd_is_refused(nf):
    res = run(nf.client, "run_shell_cmd", command="id")
    assert res["failed"]
    assert "run_shell_cmd is disabled" in res["errors"][0]


def test_get_version_names_the_stack(nf):
    versions = run(nf.client, "get_version")["result"]
    assert versions["hermes-agent"] == "0.19.0"
    assert versions["norfab"] == "0.25.0"
    assert {"norfab-hermes", "picle", "python"} <= set(versions)


def test_run_ends_before_the_callers_job_timeout(nf):
    # tool timeout < run budget < NorFab job timeout: a short job timeout caps the run
    res = run(nf.client, "invoke", job_timeout=5, agent="alpha", instructions="SLEEP 30")
    assert res["result"]["stop_reason"] == "run_timeout"


def test_model_provider_errors_are_reported_with_their_cause(nf, model):
    res = run(nf.client, "invoke", agent="gamma", instructions="FAIL 500")
    data = res["result"]
    assert data["stop_reason"] == "provider_error"
    assert any("HTTP 500" in w for w in data["warnings"]), data["warnings"]
    again = run(nf.client, "interrupt", agent="gamma", run_id=data["run_id"])
    assert again["failed"]
    assert "already finished: provider_error" in again["errors"][0]


def test_eight_questions_on_a_default_worker_all_run_at_once(nf):
    # a new user's eight concurrent questions must not wait in line on an idle worker
    runs = [run(nf.client, "start_run", agent="gamma", instructions="SLEEP 4")["result"]["run_id"] for _ in range(8)]
    deadline, states = time.time() + 30, []
    while time.time() < deadline:
        states = [run(nf.client, "get_run", agent="gamma", run_id=run_id)["result"]["state"] for run_id in runs]
        if states == ["running"] * 8 or "finished" in states:
            break
        time.sleep(0.2)
    assert states == ["running"] * 8, states
