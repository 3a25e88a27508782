"""Records tools: what the model may ask, and the refusals, with fake stores (no NorFab)."""

import json

import pytest

from norfab_hermes.errors import UnknownSession
from norfab_hermes.models import RecordsDefinition, SessionDetails, SessionMessage, SessionSummary
from norfab_hermes.worker.tools.calls import ToolError
from norfab_hermes.worker.tools.records import RecordsReader
from norfab_hermes.worker.tools.specs import RecordsSpec

SPEC = RecordsSpec("reader", "records", RecordsDefinition(agents=["watched"], read=["sessions"]))


class Sessions:
    def list(self, agent, limit):
        return [SessionSummary(session_id="s1", title="t")] if agent == "watched" else []

    def get(self, agent, session_id, limit):
        if (agent, session_id) != ("watched", "s1"):
            raise UnknownSession(f"session '{session_id}' not found for agent '{agent}'")
        text = "enable secret 5 $1$mERr$hx5rVt7 and the ACL CUST-A-IN"
        return SessionDetails(
            session_id="s1", agent=agent, worker="w", messages=[SessionMessage(role="tool", content=text)]
        )


READER = RecordsReader(Sessions(), None, None, known=lambda agent: agent in ("watched", "private"), secrets=lambda: [])


def read(**arguments):
    text, status, error = READER.read(SPEC, arguments)
    return json.loads(text)


def test_the_spec_offers_only_the_actions_and_agents_its_definition_names():
    properties = SPEC.parameters["properties"]
    assert properties["action"]["enum"] == ["list_sessions", "search_sessions", "read_session"]
    assert properties["agent"]["enum"] == ["watched"]
    assert SPEC.parameters["additionalProperties"] is False
    assert SPEC.where() == (None, None, None)
    assert SPEC.summary()["kind"] == "records"


def test_sessions_are_listed_searched_and_read_with_secrets_masked():
    assert [s["session_id"] for s in read(action="list_sessions", agent="watched")["records"]] == ["s1"]
    [hit] = read(action="search_sessions", agent="watched", text="cust-a-in")["records"]
    assert hit["session_id"] == "s1"
    assert "CUST-A-IN" in hit["excerpt"]
    whole = read(action="read_session", agent="watched", session_id="s1")["records"]
    assert "$1$" not in json.dumps(whole)
    assert "enable secret 5 ***" in whole["messages"][0]["content"]


@pytest.mark.parametrize(
    "arguments, refusal",
    [
        ({"action": "list_sessions", "agent": "private"}, "is not one whose records this tool reads"),
        ({"action": "list_sessions", "agent": "nobody"}, "is not one whose records this tool reads"),
        ({"action": "list_evidence", "agent": "watched"}, "action must be one of"),
        ({"action": "list_sessions", "agent": "watched", "workers": "all"}, "are not arguments of this tool"),
        ({"action": "read_session", "agent": "watched"}, "session_id is required"),
        ({"action": "read_session", "agent": "watched", "session_id": "s9"}, "not found for agent 'watched'"),
        ({"action": "search_sessions", "agent": "watched", "text": "x" * 201}, "text must be text of 1 to 200"),
        ({"action": "list_sessions", "agent": "watched", "limit": 500}, "limit must be a whole number"),
        ("list_sessions", "arguments must be a JSON object"),
    ],
)
def test_everything_else_is_refused(arguments, refusal):
    with pytest.raises(ToolError, match=refusal):
        READER.read(SPEC, arguments)


def test_an_agent_unknown_on_this_worker_is_refused_even_when_named():
    reader = RecordsReader(Sessions(), None, None, known=lambda agent: False, secrets=lambda: [])
    with pytest.raises(ToolError, match="is not one whose records"):
        reader.read(SPEC, {"action": "list_sessions", "agent": "watched"})
