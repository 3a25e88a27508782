"""
The Matrix channel: notifications as messages in one room, and approvals
decided there by the room's users that the inventory maps to operators.

Sending is a transport like any other (``channel.Transport``): a card per
message, edited in place (``m.replace``) when its approval is decided. The
listener (``channel.Listener``) reads the room from the moment it starts,
never what was said before, and turns ``approve <id>`` / ``deny <id> [note]``
(or a reply or a 👍/👎 on a card) of a mapped user into one ``decide`` call,
answering in the room either way. Everything in a card that came from a
device or a model is escaped before it is put in HTML.

mautrix (the library Hermes' own Matrix adapter uses) is asynchronous: the
transport runs its client on an event loop thread of its own, and the
notifier's delivery thread and the listener's thread wait on it with a
timeout. Only the worker imports this module (the ``matrix`` extra).
"""

import asyncio
import html
import logging
import os
import re
import threading
import time
from collections import OrderedDict
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Coroutine, Dict, List, Optional, TypeVar

from ...errors import InventoryError
from ...models import MatrixChannel
from .channel import Decide, Message

try:
    import aiohttp
    from mautrix.api import HTTPAPI, Method, Path
except ImportError as missing:  # the worker's matrix extra
    raise InventoryError(
        f"a notify channel of type matrix needs mautrix ({missing}): install norfab-hermes[matrix] on the worker"
    ) from missing

log = logging.getLogger(__name__)
T = TypeVar("T")

POLL_SECONDS = 30  # a sync's long poll; stopping cancels it at once
BACKOFF_MAX = 60.0
CARDS_KEPT = 1000  # approval cards remembered by event id (older ones are fetched from the room)
HERMES_FIELD = "org.norfab.hermes"  # our fields in a card's content: what a reply or reaction decides
APPROVAL_ID = re.compile(r"^[0-9a-f]{12}$")  # approvals.py: uuid4().hex[:12]
VERBS = {"approve": True, "deny": False}
REACTIONS = {"\U0001f44d": True, "\U0001f44e": False}  # 👍 approves, 👎 denies
MODIFIERS = re.compile("[\ufe0f\U0001f3fb-\U0001f3ff]")  # emoji variation selector and skin tones


@dataclass(frozen=True)
class Command:
    """A decision asked in the room: which approval and the note; or, with no approval, why it is refused."""

    approve: bool
    approval_id: Optional[str]
    note: Optional[str]
    refusal: str = ""


class MatrixTransport:
    """One ``matrix`` channel of the inventory: sends to its room and listens there for decisions."""

    updates_in_place = True

    def __init__(self, name: str, definition: MatrixChannel) -> None:
        token = os.environ.get(definition.token_env)
        if not token:
            raise InventoryError(
                f"notify.channels.{name}.token_env: environment variable {definition.token_env} is not set: "
                f"export the access token of {definition.user_id} in it before the worker starts"
            )
        self.name, self.definition = name, definition
        self._cards: "OrderedDict[str, str]" = OrderedDict()  # card event id -> approval id
        self._lock = threading.Lock()
        self._closed = False
        self.listening = threading.Event()  # set while ``listen`` reads the room (from its starting point on)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=f"matrix-{name}", daemon=True)
        self._thread.start()
        self._api: HTTPAPI = self._run(self._open(token), definition.timeout)

    async def _open(self, token: str) -> HTTPAPI:
        # the HTTP session belongs to this loop: made on it; no retries inside mautrix, the notifier retries
        session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=POLL_SECONDS + self.definition.timeout))
        return HTTPAPI(
            self.definition.homeserver,
            token=token,
            client_session=session,
            default_retry_count=0,
        )

    def _submit(self, coroutine: Coroutine[Any, Any, T]) -> "Future[T]":
        if self._closed:
            coroutine.close()
            raise RuntimeError(f"Matrix channel {self.name} is closed")
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop)

    def _run(self, coroutine: Coroutine[Any, Any, T], timeout: float) -> T:
        """Run ``coroutine`` on the client's loop; a homeserver that takes longer than ``timeout`` is a failure."""
        future = self._submit(coroutine)
        try:
            return future.result(timeout)
        except TimeoutError:
            future.cancel()
            raise TimeoutError(
                f"Matrix homeserver {self.definition.homeserver} did not answer in {timeout:g} s"
            ) from None

    # sending

    def send(self, message: Message) -> Optional[str]:
        """Post ``message`` as a card in the room; its event id (the reference ``update`` edits)."""
        # the transaction id is the message's: a retry of a send the homeserver took is not posted twice
        event_id = self._send(f"hermes-{message.id}", self._content(message))
        if message.approval_id:
            self._remember(event_id, message.approval_id)
        return event_id

    def update(self, reference: str, message: Message) -> None:
        """Edit the card ``reference`` to show ``message`` (an ``m.replace``: clients show the new content)."""
        new = self._content(message)
        edit = {
            "msgtype": new["msgtype"],
            "body": f"* {new['body']}",
            "format": "org.matrix.custom.html",
            "formatted_body": f"* {new['formatted_body']}",
            "m.new_content": new,
            "m.relates_to": {"rel_type": "m.replace", "event_id": reference},
        }
        self._send(f"hermes-{message.id}-edit-{reference}", edit)

    def close(self) -> None:
        """Close the HTTP session and stop the loop thread; a listener still running returns."""
        if self._closed:
            return
        try:
            self._run(self._api.session.close(), self.definition.timeout)
        except Exception as error:  # closing never fails the worker's stop
            log.warning(f"Matrix channel {self.name} - Closing its HTTP session failed: {error}")
        self._closed = True
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(self.definition.timeout)
        if not self._thread.is_alive():
            self._loop.close()

    def _send(self, txn_id: str, content: Dict[str, Any]) -> str:
        """One m.room.message in the room; its event id."""
        path = Path.v3.rooms[self.definition.room_id].send["m.room.message"][txn_id]
        reply = self._call(Method.PUT, path, content)
        event_id: str = reply["event_id"]
        return event_id

    def _call(
        self,
        method: Method,
        path: Any,
        content: Optional[Dict[str, Any]] = None,
        query: Optional[Dict[str, str]] = None,
    ) -> Dict[str, Any]:
        """One client-server API call, as the worker's user; its JSON reply (mautrix raises the homeserver's error)."""
        reply: Dict[str, Any] = self._run(
            self._api.request(method, path, content, query_params=query), self.definition.timeout
        )
        return reply

    def _content(self, message: Message) -> Dict[str, Any]:
        """The card: plain text as every channel renders it, and HTML in which no untrusted text is markup."""
        body = message.text()
        parts = [f"<p><b>{html.escape(message.summary)}</b></p>"]
        if message.details:
            parts.append("<p>" + "<br>".join(html.escape(line) for line in message.details) + "</p>")
        if message.diff:
            parts.append(f"<pre><code>{html.escape(message.diff)}</code></pre>")
        parts.append(f"<p>open: <code>{html.escape(message.reference)}</code></p>")
        if message.kind == "approval_requested" and message.approval_id and self.definition.operators:
            hint = f"reply: approve {message.approval_id}  or: deny {message.approval_id} [note]"
            body += f"\n{hint}"
            parts.append(f"<p>{html.escape(hint)}</p>")
        content: Dict[str, Any] = {
            "msgtype": "m.notice",
            "body": body,
            "format": "org.matrix.custom.html",
            "formatted_body": "".join(parts),
            "m.mentions": {},  # pings no one: an "@room" or a user id in device output stays text
        }
        if message.approval_id:
            content[HERMES_FIELD] = {"approval_id": message.approval_id, "key": message.key}
        return content

    def _remember(self, event_id: str, approval_id: str) -> None:
        with self._lock:
            self._cards[event_id] = approval_id
            while len(self._cards) > CARDS_KEPT:
                self._cards.popitem(last=False)

    # listening

    def listen(self, decide: Decide, stopping: Any) -> None:
        """Read the room from now until ``stopping`` is set, deciding what mapped users ask; never raises."""
        try:
            self._listen(decide, stopping)
        finally:
            self.listening.clear()

    def _listen(self, decide: Decide, stopping: Any) -> None:
        started = time.monotonic()
        since: Optional[str] = None
        filter_id = ""
        delay = 1.0
        while not stopping.is_set() and not self._closed:
            try:
                if since is None:
                    # where "now" is: the room from this token on (older events are in the reply, unread)
                    path = Path.v3.user[self.definition.user_id].filter
                    filter_id = self._call(Method.POST, path, self._filter())["filter_id"]
                    first = self._call(Method.GET, Path.v3.sync, query={"timeout": "0", "filter": filter_id})
                    since = first["next_batch"]
                    self.listening.set()
                    log.info(f"Matrix channel {self.name} - Listening in {self.definition.room_id}")
                query = {"since": since, "timeout": str(POLL_SECONDS * 1000), "filter": filter_id}
                reply = self._wait(self._api.request(Method.GET, Path.v3.sync, query_params=query), stopping)
                if reply is None:
                    return  # stopping
                since = reply["next_batch"]
                delay = 1.0
            except Exception as error:
                if stopping.is_set() or self._closed:
                    return
                log.warning(f"Matrix channel {self.name} - Sync failed, again in {delay:g} s: {error}")
                stopping.wait(delay)
                delay = min(delay * 2, BACKOFF_MAX)
                continue
            room = reply.get("rooms", {}).get("join", {}).get(self.definition.room_id, {})
            for event in room.get("timeline", {}).get("events", []):
                try:
                    if not _said_before(event, started):
                        self._handle(event, decide)
                except Exception as error:  # one event's failure (its answer not sent) leaves the rest
                    log.warning(
                        f"Matrix channel {self.name} - Event {event.get('event_id')} "
                        f"from {event.get('sender')} not handled: {error}"
                    )

    def _filter(self) -> Dict[str, Any]:
        timeline = {"types": ["m.room.message", "m.reaction"], "limit": 50}
        return {
            "room": {"rooms": [self.definition.room_id], "timeline": timeline, "state": {"types": []}},
            "presence": {"types": []},
            "account_data": {"types": []},
        }

    def _wait(self, coroutine: Coroutine[Any, Any, T], stopping: Any) -> Optional[T]:
        """``_run`` for a long poll: None as soon as ``stopping`` is set (the poll is cancelled)."""
        future = self._submit(coroutine)
        deadline = time.monotonic() + POLL_SECONDS + self.definition.timeout
        while True:
            try:
                return future.result(0.25)
            except TimeoutError:
                if stopping.is_set() or self._closed:
                    future.cancel()
                    return None
                if time.monotonic() > deadline:
                    future.cancel()
                    raise TimeoutError(
                        f"Matrix homeserver {self.definition.homeserver} did not answer a sync"
                    ) from None

    def _handle(self, event: Dict[str, Any], decide: Decide) -> None:
        sender = event.get("sender", "")
        if sender == self.definition.user_id:
            return  # its own cards and answers: never a decision
        content = event.get("content") or {}
        if event.get("type") == "m.reaction":
            command, answer_to = self._reaction(content), (content.get("m.relates_to") or {}).get("event_id")
        else:
            command, answer_to = self._command(content), event.get("event_id")
        if command is None:
            return
        operator = self.definition.operators.get(sender)
        if operator is None:
            log.warning(f"Matrix channel {self.name} - Refused a decision of unmapped {sender}")
            self._answer(
                answer_to,
                f"{sender} is not mapped to an operator: add it under notify.channels.{self.name}.operators",
            )
            return
        if command.approval_id is None:
            self._answer(answer_to, command.refusal)
            return
        verb = "approve" if command.approve else "deny"
        log.info(f"Matrix channel {self.name} - Decision of {sender} ({operator}): {verb} {command.approval_id}")
        try:
            info = decide(command.approval_id, command.approve, operator, command.note, self.name)
        except Exception as error:
            self._answer(answer_to, f"refused: {error}")
            return
        self._answer(answer_to, _confirmation(info, command, operator))

    def _command(self, content: Dict[str, Any]) -> Optional[Command]:
        """What a text message asks; None where it asks nothing (chat, notices, edits)."""
        if content.get("msgtype") != "m.text" or not isinstance(content.get("body"), str):
            return None
        relates = content.get("m.relates_to") or {}
        if relates.get("rel_type") == "m.replace":
            return None  # an edit of a message already read: deciding twice is not what the user meant
        card = relates.get("event_id") if relates.get("rel_type") == "m.thread" else None
        card = card or (relates.get("m.in_reply_to") or {}).get("event_id")
        words = _strip_reply_fallback(content["body"]).split()
        if not words or words[0].lower() not in VERBS:
            return None
        verb, approve, args = words[0].lower(), VERBS[words[0].lower()], words[1:]
        usage = f"reply: {verb} <approval id>" + (" [note]" if not approve else "")
        cleaned = [arg.strip(".,;:!?").lower() for arg in args]
        ids = [word for word in cleaned if APPROVAL_ID.match(word)]
        if len(ids) > 1:
            return Command(approve, None, None, f"more than one approval id ({', '.join(ids)}): {usage}")
        if ids and ids[0] != cleaned[0]:
            return Command(approve, None, None, f"the approval id goes first: {usage}")
        approval_id = ids[0] if ids else None
        if approval_id:
            args = args[1:]
        on_card = self._card_approval(card) if card else None
        if approval_id and on_card and approval_id != on_card:
            return Command(approve, None, None, f"{approval_id} is not the approval of this card ({on_card}): {usage}")
        approval_id = approval_id or on_card
        if approval_id is None:
            return Command(approve, None, None, f"which approval? {usage}")
        return Command(approve, approval_id, " ".join(args) or None)

    def _reaction(self, content: Dict[str, Any]) -> Optional[Command]:
        """A 👍 or 👎 on one of its approval cards; None for any other reaction."""
        relates = content.get("m.relates_to") or {}
        key = MODIFIERS.sub("", str(relates.get("key", "")))
        if relates.get("rel_type") != "m.annotation" or key not in REACTIONS or not relates.get("event_id"):
            return None
        approval_id = self._card_approval(relates["event_id"])
        return Command(REACTIONS[key], approval_id, None) if approval_id else None

    def _card_approval(self, event_id: str) -> Optional[str]:
        """The approval a card of this channel asks for: remembered, else read from the card itself."""
        with self._lock:
            known = self._cards.get(event_id)
        if known:
            return known
        path = Path.v3.rooms[self.definition.room_id].event[event_id]
        try:
            event = self._call(Method.GET, path)
        except Exception:
            return None  # not an event it can read: not its card
        if event.get("sender") != self.definition.user_id:
            return None  # only its own cards say which approval they are
        approval_id = (event.get("content", {}).get(HERMES_FIELD) or {}).get("approval_id")
        if isinstance(approval_id, str) and APPROVAL_ID.match(approval_id):
            self._remember(event_id, approval_id)
            return approval_id
        return None

    def _answer(self, event_id: Optional[str], text: str) -> None:
        """A notice in the room, as a reply to what it answers."""
        content: Dict[str, Any] = {"msgtype": "m.notice", "body": text, "m.mentions": {}}
        if event_id:
            content["m.relates_to"] = {"m.in_reply_to": {"event_id": event_id}}
        self._send(self._api.get_txn_id(), content)


def _said_before(event: Dict[str, Any], started: float) -> bool:
    """Whether ``event`` was sent before the listener started: its age (the homeserver's count of the ms since
    it was sent, free of clock skew) is longer than the listener's. The sync token alone does not say: Synapse
    answers a repeated initial sync from a cache (2 minutes by default), with the token of an earlier start."""
    age = (event.get("unsigned") or {}).get("age")
    return isinstance(age, (int, float)) and age / 1000 > time.monotonic() - started


def _strip_reply_fallback(body: str) -> str:
    """A reply's body without the quoted lines (``> <@user> ...``) some clients put before it."""
    lines: List[str] = body.splitlines()
    while lines and lines[0].startswith(">"):
        lines.pop(0)
    return "\n".join(lines).strip()


def _confirmation(info: Any, command: Command, operator: str) -> str:
    """What the room is told of a decision applied: the approval's state as ``decide`` returned it."""
    approval_id = getattr(info, "approval_id", None) or command.approval_id
    state = getattr(info, "state", None) or ("approved" if command.approve else "denied")
    if state == "pending":  # one of several approvals it needs
        done, needed = len(getattr(info, "approved_by", []) or []), getattr(info, "approvals_required", 1)
        return f"approval {approval_id} approved by {operator}: {done} of {needed} approvals, still pending"
    return f"approval {approval_id} {state} by {getattr(info, 'decided_by', None) or operator}"
