"""
What one tool call carries: the refusal the model reads and the trace of what the call started.
"""

from dataclasses import dataclass, field
from typing import Any, List, Optional

from ...models import ChangeRecord
from ..approvals.request import Verdict


class ToolError(Exception):
    """A call that cannot go ahead; the message is for the model."""


@dataclass
class CallTrace:
    """What one tool call has started so far; its summary is built from it once, when the call ends."""

    job_uuid: Optional[str] = None  # the child NorFab job
    delegated: Optional[Any] = None  # a delegate's asked run (``delegation.Child``)
    approved_by: Optional[str] = None  # who approved an approval-gated call
    artifacts: List[Any] = field(default_factory=list)  # what the call received, kept as evidence
    change: Optional[ChangeRecord] = None  # a change's preview, digest, verification and rollback


def approved(verdict: Verdict) -> Optional[str]:
    """Who approved a call (``approvals.Approver``), or the refusal as the model reads it."""
    if verdict.refusal:
        raise ToolError(verdict.refusal)
    return verdict.approved_by
