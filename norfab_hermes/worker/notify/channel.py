"""
What a notification channel is to the rest of the worker: a transport that
sends one message and, where the channel allows, updates one it sent.

The notifier (``notify/outbox.py``) owns delivery: it keeps every message in
an outbox on disk, calls ``send`` from the channel's own thread, in order, one
at a time, retries with backoff what raised, and dead-letters what keeps
failing. A transport only talks to its server; it raises on any failure (the
message is retried), never swallows one.
"""

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Protocol


@dataclass(frozen=True)
class Message:
    """One notification as every channel renders it."""

    id: str  # unique per notification (the outbox row): receivers refuse a replay by it
    kind: str  # approval_requested, approval_decided, approval_expired, regressed, recovered, ...
    key: str  # what it is about: messages with one key are one card (e.g. approval:<id>), updated in place
    agent: str
    worker: str
    summary: str  # what happened, in one line
    reference: str  # what an operator runs to open it, e.g. "hermes run 3f2a..."
    time: str  # ISO, UTC
    run_id: Optional[str] = None
    case: Optional[str] = None
    evidence: List[str] = field(default_factory=list)
    details: List[str] = field(default_factory=list)  # lines shown under the summary (devices, digest, who may decide)
    diff: Optional[str] = None  # a change's dry-run diff, already cut, with a reference to the whole
    approval_id: Optional[str] = None
    data: Dict[str, Any] = field(default_factory=dict)  # the event's own fields, for webhook receivers

    def text(self) -> str:
        """The message as plain text: summary, details, diff, reference."""
        lines = [self.summary, *self.details]
        if self.diff:
            lines += ["", self.diff]
        return "\n".join(lines + ["", f"open: {self.reference}"])


class Transport(Protocol):
    """One channel's sending side."""

    name: str  # the channel's name in the inventory
    updates_in_place: bool  # True where a sent message can be edited (a Matrix event); else a new one is sent

    def send(self, message: Message) -> Optional[str]:
        """Send ``message``; the channel's reference of it (an event id) where it can be updated later."""

    def update(self, reference: str, message: Message) -> None:
        """Replace the message sent as ``reference`` with ``message`` (only where updates_in_place)."""

    def close(self) -> None:
        """Release connections; the notifier calls it once, at worker stop."""


# decide(approval_id, approve, operator, note, channel): the decision of a channel's authenticated user,
# mapped to an operator; returns the approval as it now stands, or raises the refusal (NotAllowed,
# InvalidRequest, UnknownApproval) whose text the channel shows the user
Decide = Callable[[str, bool, str, Optional[str], str], Any]


class Listener(Protocol):
    """A channel that also reads decisions from its users (Matrix): started with the worker."""

    def listen(self, decide: Decide, stopping: Any) -> None:
        """Until ``stopping`` (a threading.Event) is set: read replies, pass decisions to ``decide``,
        answer each in the channel (applied, or refused with the reason)."""
