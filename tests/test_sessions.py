"""Sessions: listing, reading, and identity (worker, agent, session id)."""

from conftest import Lab, invoke, run

WORKER = "hermes-worker-1"


LAB = Lab(
    workers={
        WORKER: {
            "alpha": {"instructions": "You are ALPHA.", "toolsets": ["clarify"]},
            "beta": {"instructions": "You are BETA."},
        }
    }
)


def test_sessions_lists_only_the_agents_own_sessions_newest_first(nf):
    first = invoke(nf, "alpha", "first alpha session")["session_id"]
    invoke(nf, "beta", "a beta session")
    second = invoke(nf, "alpha", "second alpha session")["session_id"]
    invoke(nf, "alpha", "first continues", session_id=first)  # first becomes the most recently active

    sessions = run(nf.client, "get_sessions", agent="alpha")["result"]
    ids = [s["session_id"] for s in sessions]
    assert ids[:2] == [first, second]
    assert all(s["source"] == "norfab" for s in sessions)
    latest = sessions[0]
    assert latest["message_count"] >= 4
    assert latest["preview"].startswith("first alpha session")
    assert latest["started"]
    assert latest["last_active"] >= latest["started"]

    beta_ids = [s["session_id"] for s in run(nf.client, "get_sessions", agent="beta")["result"]]
    assert not set(beta_ids) & set(ids)
    assert len(run(nf.client, "get_sessions", agent="alpha", limit=1)["result"]) == 1


def test_session_shows_messages_with_tool_calls(nf):
    session_id = invoke(nf, "alpha", 'CALL clarify {"question": "Which device?"}')["session_id"]
    session = run(nf.client, "get_session", agent="alpha", session_id=session_id)["result"]
    assert (session["session_id"], session["agent"], session["worker"]) == (session_id, "alpha", WORKER)
    roles = [m["role"] for m in session["messages"]]
    assert roles == ["user", "assistant", "tool", "assistant"]
    call = session["messages"][1]["tool_calls"][0]
    assert call["name"] == "clarify"
    assert "Which device?" in call["arguments"]
    assert session["messages"][2]["tool_name"] == "clarify"
    assert session["messages"][3]["content"].startswith("FINAL: clarify:")
    assert all(m["timestamp"] for m in session["messages"])

    newest = run(nf.client, "get_session", agent="alpha", session_id=session_id, limit=1)["result"]
    assert [m["role"] for m in newest["messages"]] == ["assistant"]


def test_unknown_session_is_a_clear_error(nf):
    res = run(nf.client, "get_session", agent="alpha", session_id="20990101_000000_nothere")
    assert res["failed"]
    assert res["errors"] == [f"session '20990101_000000_nothere' not found for agent 'alpha' on worker '{WORKER}'"]


def test_a_session_cannot_be_read_or_continued_through_another_agent(nf):
    alpha = invoke(nf, "alpha", "private to alpha")["session_id"]
    for res in (
        run(nf.client, "get_session", agent="beta", session_id=alpha),
        run(nf.client, "invoke", agent="beta", instructions="hi", session_id=alpha),
    ):
        assert res["failed"]
        assert f"session '{alpha}' not found for agent 'beta'" in res["errors"][0]
