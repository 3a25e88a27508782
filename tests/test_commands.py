"""Native slash commands through the gateway, never a shell."""

import pytest
from conftest import Lab, run

WORKER = "hermes-worker-1"


LAB = Lab(
    workers={WORKER: {"alpha": {"instructions": "You are ALPHA.", "hermes": {"model": {"default": "alpha-model"}}}}}
)


def command(nf, text, session_id=None):
    return run(nf.client, "command", agent="alpha", command=text, session_id=session_id)


def test_help_lists_native_commands(nf):
    res = command(nf, "/help")
    assert not res["failed"], res["errors"]
    assert "/status" in res["result"]["response"]
    assert "/usage" in res["result"]["response"]


def test_status_and_usage_describe_the_session(nf):
    session_id = run(nf.client, "invoke", agent="alpha", instructions="hello")["result"]["session_id"]
    status = command(nf, "/status", session_id)["result"]
    assert session_id in status["response"]
    assert "alpha-model" in status["response"]
    assert status["session_id"] == session_id
    usage = command(nf, "/usage", session_id)["result"]
    assert "token" in usage["response"].lower()


def test_title_names_the_session(nf):
    session_id = run(nf.client, "invoke", agent="alpha", instructions="to be titled")["result"]["session_id"]
    assert not command(nf, "/title r1 interface check", session_id)["failed"]
    sessions = {s["session_id"]: s for s in run(nf.client, "get_sessions", agent="alpha")["result"]}
    assert sessions[session_id]["title"] == "r1 interface check"


def test_new_starts_a_fresh_session_in_the_chat(nf):
    session_id = run(nf.client, "invoke", agent="alpha", instructions="old conversation")["result"]["session_id"]
    new = command(nf, "/new", session_id)["result"]
    assert new["session_id"]
    assert new["session_id"] != session_id


def test_supported_commands_are_published(nf):
    status = run(nf.client, "get_status")["result"]
    assert {"help", "new", "sessions", "resume", "status", "usage", "title", "memory"} <= set(status["commands"])
    assert run(nf.client, "get_agent", agent="alpha")["result"]["commands"] == status["commands"]


@pytest.mark.parametrize("text", ["/restart", "/update", "/model other-model", "/yolo", "/debug", "hello"])
def test_unsupported_or_dangerous_commands_are_refused(nf, text):
    res = command(nf, text)
    assert res["failed"]
    assert "is not a supported command; supported: /help, /commands" in res["errors"][0]


def test_arguments_that_change_settings_are_refused(nf):
    res = command(nf, "/memory approval off")
    assert res["failed"]
    assert "use '/memory' or '/memory pending'" in res["errors"][0]
