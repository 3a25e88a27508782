"""
The two sides of an approval's channels.

``AskChannel``: a way of asking for a decision (the run's caller inline, the
inbox); ``Approver`` picks one per call. ``ApprovalChannel``: told of each
step of every approval after the record has it (requested, partly_approved,
decided, expired): where a notifier (``worker/notify``) hooks in.
"""

from typing import Protocol

from ...models import ApprovalInfo
from .request import Ask, AskingRun, Verdict


class AskChannel(Protocol):
    def ask(self, run: AskingRun, ask: Ask) -> Verdict:
        """Ask for the call's decision and wait for it (within the run's budget)."""


class ApprovalChannel(Protocol):
    """It must return at once (queue, never send here); a channel that raises is logged and the
    approval goes on."""

    def approval(self, info: ApprovalInfo, kind: str) -> None: ...
