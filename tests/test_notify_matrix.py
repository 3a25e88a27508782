"""The Matrix channel against a real Synapse (norfab_hermes.testing.synapse): cards as another user of the
room reads them, edits in place, and approvals decided in the room by mapped users, refused for the rest.
Every check reads the room's actual events as alice's client sees them."""

import itertools
import socket
import threading
import uuid
from contextlib import contextmanager

import pytest
from conftest import eventually

from norfab_hermes.errors import InventoryError, NotAllowed
from norfab_hermes.models import ApprovalInfo, MatrixChannel, NotifySettings
from norfab_hermes.testing.embedded import free_port
from norfab_hermes.testing.synapse import synapse_server
from norfab_hermes.worker.notify.channel import Message
from norfab_hermes.worker.notify.matrix import MatrixTransport
from norfab_hermes.worker.notify.notifier import Notifier

TOKEN_ENV = "NORFAB_HERMES_TEST_MATRIX_TOKEN"
ROOM = "ops-room"
OPERATORS = {"@alice:localhost": "alice-ops", "@bob:localhost": "bob-ops"}
numbers = itertools.count()


@pytest.fixture(scope="module")
def homeserver(request):
    failed = request.session.testsfailed
    with synapse_server(("hermes", "alice", "bob", "mallory")) as server:
        yield server
        reporter = request.config.pluginmanager.get_plugin("terminalreporter")
        if request.session.testsfailed > failed and reporter is not None:  # the log goes with the directory
            reporter.write_line(f"\nSynapse's log at {server.url}, its end:\n{server.log_tail()}")


@pytest.fixture(scope="module")
def transport(homeserver):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(TOKEN_ENV, homeserver.users["hermes"].access_token)
        matrix = MatrixTransport(ROOM, channel(homeserver))
    yield matrix
    matrix.close()


def channel(server, **fields) -> MatrixChannel:
    definition = dict(
        type="matrix",
        homeserver=server.url,
        user_id=server.users["hermes"].user_id,
        token_env=TOKEN_ENV,
        room_id=server.room_id,
        operators=OPERATORS,
    )
    return MatrixChannel(**{**definition, **fields})


def new_id() -> str:
    return uuid.uuid4().hex[:12]  # as approvals.py makes them


def message(**fields) -> Message:
    approval_id = fields.pop("approval_id", None)
    base = dict(
        id=f"m-{next(numbers)}",
        kind="approval_requested" if approval_id else "regressed",
        key=f"approval:{approval_id}" if approval_id else "check:bgp",
        agent="netops",
        worker="worker-1",
        summary="netops wants to change ceos1",
        reference="hermes run 3f2a",
        time="2026-01-01T00:00:00+00:00",
        approval_id=approval_id,
    )
    return Message(**{**base, **fields})


class Decisions:
    """A recording decide: the approval as a real inbox returns it, or the refusal it was told to raise."""

    def __init__(self, error: Exception = None):
        self.calls, self.error = [], error

    def __call__(self, approval_id, approve, operator, note, channel_name):
        self.calls.append((approval_id, approve, operator, note, channel_name))
        if self.error:
            raise self.error
        return approval(approval_id, "approved" if approve else "denied", operator)


def approval(approval_id, state="pending", decided_by=None) -> ApprovalInfo:
    return ApprovalInfo(
        approval_id=approval_id,
        run_id="r1",
        agent="netops",
        worker="worker-1",
        tool="change",
        target="nornir.cli",
        arguments_digest="abc",
        state=state,
        requested="2026-01-01T00:00:00+00:00",
        expires="2026-01-01T01:00:00+00:00",
        decided_by=decided_by,
    )


@contextmanager
def listening(transport, decide):
    stopping = threading.Event()
    thread = threading.Thread(target=transport.listen, args=(decide, stopping), daemon=True)
    thread.start()
    assert transport.listening.wait(30), "the listener never had its starting point"
    try:
        yield
    finally:
        stopping.set()
        thread.join(10)
        assert not thread.is_alive(), "listen did not return when stopping was set"


def say(homeserver, user, body, **content):
    return homeserver.say(homeserver.users[user].access_token, {"msgtype": "m.text", "body": body, **content})


def answer(homeserver, event_id):
    """The body of the worker's reply to ``event_id``, as alice reads the room."""

    def find():
        for event in homeserver.messages(homeserver.users["alice"].access_token):
            content = event["content"]
            replied = (content.get("m.relates_to") or {}).get("m.in_reply_to", {}).get("event_id")
            if event["sender"] == "@hermes:localhost" and replied == event_id:
                return content["body"]
        return None

    return eventually(find, f"the worker's answer to {event_id}", timeout=30)


def event(homeserver, event_id, user="alice"):
    return homeserver.call(
        "GET", f"/_matrix/client/v3/rooms/{homeserver.room_id}/event/{event_id}", homeserver.users[user].access_token
    )


def test_a_card_arrives_with_untrusted_text_escaped(homeserver, transport):
    sent = message(
        summary="<script>alert(1)</script> regressed",
        details=["device ceos1 says <b>up</b> & running"],
        diff="- hostname <old>\n+ hostname <new>",
    )
    card = event(homeserver, transport.send(sent))
    content = card["content"]
    assert card["sender"] == "@hermes:localhost" and card["type"] == "m.room.message"
    assert content["body"] == sent.text()
    assert content["m.mentions"] == {}  # no "@room" in device output pings anyone
    html = content["formatted_body"]
    assert "&lt;script&gt;alert(1)&lt;/script&gt; regressed" in html and "<script>" not in html
    assert "device ceos1 says &lt;b&gt;up&lt;/b&gt; &amp; running" in html and "<b>up</b>" not in html
    assert "<pre><code>- hostname &lt;old&gt;\n+ hostname &lt;new&gt;</code></pre>" in html


def test_an_approval_card_says_how_to_decide_it(homeserver, transport):
    approval_id = new_id()
    content = event(homeserver, transport.send(message(approval_id=approval_id)))["content"]
    assert content["body"].endswith(f"reply: approve {approval_id}  or: deny {approval_id} [note]")
    assert content["org.norfab.hermes"]["approval_id"] == approval_id


def test_a_retried_send_is_posted_once(homeserver, transport):
    sent = message(summary="sent twice, shown once")
    assert transport.send(sent) == transport.send(sent)


def test_an_update_replaces_the_card(homeserver, transport):
    approval_id = new_id()
    card = transport.send(message(approval_id=approval_id))
    transport.update(card, message(approval_id=approval_id, kind="approval_decided", summary="approved by <alice>"))

    def edit():
        for seen in homeserver.messages(homeserver.users["alice"].access_token):
            relates = seen["content"].get("m.relates_to") or {}
            if relates.get("rel_type") == "m.replace" and relates.get("event_id") == card:
                return seen["content"]
        return None

    content = eventually(edit, "the edit of the card")
    assert content["m.new_content"]["body"].startswith("approved by <alice>")
    assert "approved by &lt;alice&gt;" in content["m.new_content"]["formatted_body"]
    assert "reply: approve" not in content["m.new_content"]["body"]  # decided: no longer asks


def test_a_send_that_fails_or_hangs_raises(homeserver, monkeypatch):
    monkeypatch.setenv(TOKEN_ENV, "not-a-token")
    refused = MatrixTransport(ROOM, channel(homeserver))
    try:
        with pytest.raises(Exception, match="M_UNKNOWN_TOKEN|Unknown access token|Invalid access token"):
            refused.send(message())
    finally:
        refused.close()
    with socket.socket() as silent:  # accepts connections, never answers
        port = free_port()
        silent.bind(("127.0.0.1", port))
        silent.listen()
        url = f"http://127.0.0.1:{port}"
        hanging = MatrixTransport(ROOM, channel(homeserver, homeserver=url, timeout=1))
        try:
            with pytest.raises(TimeoutError, match="did not answer in 1 s"):
                hanging.send(message())
        finally:
            hanging.close()


def test_a_missing_token_variable_is_an_inventory_error(homeserver, monkeypatch):
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    with pytest.raises(
        InventoryError, match=f"notify.channels.{ROOM}.token_env: environment variable {TOKEN_ENV} is not set"
    ):
        MatrixTransport(ROOM, channel(homeserver))


def test_a_mapped_user_approves_and_the_room_is_told(homeserver, transport):
    decide, approval_id = Decisions(), new_id()
    with listening(transport, decide):
        asked = say(homeserver, "alice", f"Approve {approval_id}")
        assert answer(homeserver, asked) == f"approval {approval_id} approved by alice-ops"
    assert decide.calls == [(approval_id, True, "alice-ops", None, ROOM)]


def test_a_deny_carries_its_note(homeserver, transport):
    decide, approval_id = Decisions(), new_id()
    with listening(transport, decide):
        asked = say(homeserver, "bob", f"deny {approval_id} not now")
        assert answer(homeserver, asked) == f"approval {approval_id} denied by bob-ops"
    assert decide.calls == [(approval_id, False, "bob-ops", "not now", ROOM)]


def test_a_reply_to_a_card_decides_that_card(homeserver, transport):
    decide, approval_id = Decisions(), new_id()
    card = transport.send(message(approval_id=approval_id))
    with listening(transport, decide):
        reply = {"m.relates_to": {"m.in_reply_to": {"event_id": card}}}
        asked = say(homeserver, "alice", "> <@hermes:localhost> netops wants ...\n\ndeny too risky today", **reply)
        assert answer(homeserver, asked) == f"approval {approval_id} denied by alice-ops"
        other = new_id()
        mismatch = say(homeserver, "alice", f"approve {other}", **reply)
        assert answer(homeserver, mismatch).startswith(f"{other} is not the approval of this card ({approval_id})")
    assert decide.calls == [(approval_id, False, "alice-ops", "too risky today", ROOM)]


def test_a_thumbs_up_on_a_card_approves_it(homeserver, transport):
    decide, approval_id = Decisions(), new_id()
    card = transport.send(message(approval_id=approval_id))
    with listening(transport, decide):
        reaction = {"m.relates_to": {"rel_type": "m.annotation", "event_id": card, "key": "\U0001f44d\ufe0f"}}
        homeserver.say(homeserver.users["bob"].access_token, reaction, event_type="m.reaction")
        assert answer(homeserver, card) == f"approval {approval_id} approved by bob-ops"
    assert decide.calls == [(approval_id, True, "bob-ops", None, ROOM)]


def test_an_unmapped_user_is_refused_and_decides_nothing(homeserver, transport):
    decide, approval_id = Decisions(), new_id()
    with listening(transport, decide):
        asked = say(homeserver, "mallory", f"approve {approval_id}")
        assert answer(homeserver, asked) == (
            f"@mallory:localhost is not mapped to an operator: add it under notify.channels.{ROOM}.operators"
        )
    assert decide.calls == []


@pytest.mark.parametrize(
    "text, refusal",
    [
        ("approve", "which approval? reply: approve <approval id>"),
        ("deny please", "which approval? reply: deny <approval id> [note]"),
        (
            "approve aaaaaaaaaaa1 aaaaaaaaaaa2",
            "more than one approval id (aaaaaaaaaaa1, aaaaaaaaaaa2): reply: approve <approval id>",
        ),
    ],
)
def test_a_command_without_one_approval_is_refused_with_the_fix(homeserver, transport, text, refusal):
    decide = Decisions()
    with listening(transport, decide):
        assert answer(homeserver, say(homeserver, "alice", text)) == refusal
    assert decide.calls == []


def test_one_approval_of_several_needed_is_answered_as_still_pending(homeserver, transport):
    approval_id = new_id()

    def decide(approval_id, approve, operator, note, channel_name):
        return approval(approval_id).model_copy(update={"approved_by": [operator], "approvals_required": 2})

    with listening(transport, decide):
        assert answer(homeserver, say(homeserver, "alice", f"approve {approval_id}")) == (
            f"approval {approval_id} approved by alice-ops: 1 of 2 approvals, still pending"
        )


def test_a_refused_decision_is_shown_in_the_room(homeserver, transport):
    reason = "operator 'alice-ops' does not hold approver for agent 'netops'"
    decide, approval_id = Decisions(NotAllowed(reason)), new_id()
    with listening(transport, decide):
        assert answer(homeserver, say(homeserver, "alice", f"approve {approval_id}")) == f"refused: {reason}"
    assert decide.calls == [(approval_id, True, "alice-ops", None, ROOM)]


def test_only_what_is_said_while_listening_by_others_decides(homeserver, transport):
    decide, before, own, chat, after = Decisions(), new_id(), new_id(), new_id(), new_id()
    say(homeserver, "alice", f"approve {before}")  # said before the worker listened
    with listening(transport, decide):
        say(homeserver, "hermes", f"approve {own}")  # the worker's own user, even as m.text
        said = say(homeserver, "alice", f"what do you think of {chat}?")  # chat, not a command
        edit = {"m.new_content": {"msgtype": "m.text", "body": f"approve {chat}"}}
        say(
            homeserver,
            "alice",
            f"approve {chat}",
            **edit,
            **{"m.relates_to": {"rel_type": "m.replace", "event_id": said}},
        )
        asked = say(homeserver, "alice", f"approve {after}")
        assert answer(homeserver, asked) == f"approval {after} approved by alice-ops"
    assert decide.calls == [(after, True, "alice-ops", None, ROOM)]


def test_a_restarted_listener_does_not_act_again_on_what_was_said_before(homeserver, transport):
    # Synapse answers a repeated initial sync from its cache, with the first start's token: a worker restarted
    # within minutes is handed the commands its first run already decided
    first, second, before, after = Decisions(), Decisions(), new_id(), new_id()
    with listening(transport, first):
        answer(homeserver, say(homeserver, "alice", f"approve {before}"))
    with listening(transport, second):
        answer(homeserver, say(homeserver, "alice", f"approve {after}"))
    assert first.calls == [(before, True, "alice-ops", None, ROOM)]
    assert second.calls == [(after, True, "alice-ops", None, ROOM)]


def test_the_notifier_posts_an_approval_card_and_edits_it_when_it_is_decided_in_the_room(
    homeserver, tmp_path, monkeypatch
):
    monkeypatch.setenv(TOKEN_ENV, homeserver.users["hermes"].access_token)
    notifier, approval_id = (
        Notifier("worker-1", tmp_path, NotifySettings(channels={ROOM: channel(homeserver)})),
        new_id(),
    )
    decided = []

    def decide(approval_id, approve, operator, note, channel_name):  # the inbox tells the notifier, as it does
        info = approval(approval_id, "approved" if approve else "denied", operator)
        decided.append((approval_id, approve, operator, note, channel_name))
        notifier.approval(info, "decided")
        return info

    notifier.start(decide)
    try:
        assert notifier.deliveries[ROOM].transport.listening.wait(30)
        notifier.approval(approval(approval_id), "requested")

        def card():
            for seen in homeserver.messages(homeserver.users["alice"].access_token):
                fields = seen["content"].get("org.norfab.hermes") or {}
                if fields.get("approval_id") == approval_id and "m.relates_to" not in seen["content"]:
                    return seen["event_id"]
            return None

        card_id = eventually(card, "the approval's card in the room")
        asked = say(homeserver, "alice", "approve", **{"m.relates_to": {"m.in_reply_to": {"event_id": card_id}}})
        assert answer(homeserver, asked) == f"approval {approval_id} approved by alice-ops"

        def edit():
            for seen in homeserver.messages(homeserver.users["alice"].access_token):
                relates = seen["content"].get("m.relates_to") or {}
                if relates.get("rel_type") == "m.replace" and relates.get("event_id") == card_id:
                    return seen["content"]["m.new_content"]["body"]
            return None

        assert eventually(edit, "the card edited").startswith(f"approval {approval_id} approved by alice-ops")
    finally:
        notifier.stop()
    assert decided == [(approval_id, True, "alice-ops", None, ROOM)]


def test_the_listener_retries_an_unreachable_homeserver_until_stopped(homeserver, monkeypatch, caplog):
    monkeypatch.setenv(TOKEN_ENV, homeserver.users["hermes"].access_token)
    down = MatrixTransport(ROOM, channel(homeserver, homeserver=f"http://127.0.0.1:{free_port()}", timeout=1))
    stopping, decide = threading.Event(), Decisions()
    thread = threading.Thread(target=down.listen, args=(decide, stopping), daemon=True)
    try:
        with caplog.at_level("WARNING", logger="norfab_hermes.worker.notify.matrix"):
            thread.start()
            eventually(lambda: "Sync failed, again in 2 s" in caplog.text, "a second attempt after a backoff")
            stopping.set()
            thread.join(10)
        assert not thread.is_alive(), "listen did not return when stopping was set"
        assert down.listening.is_set() is False and decide.calls == []
        assert homeserver.users["hermes"].access_token not in caplog.text
    finally:
        down.close()
