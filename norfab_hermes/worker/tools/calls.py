"""
What one tool call carries: the refusal the model reads and the trace of what the call started.
"""

from dataclasses import dataclass, field
from typing import Any, List, Optional, Protocol, Set

from ...models import ArtifactSummary, ChangeRecord, ToolCallSummary
from ..approvals.request import AskingRun, Verdict


class ChangeBudget(Protocol):
    """The run's budget of changes (``runs.budget.Budget``)."""

    def reserve_change(self) -> Optional[str]: ...

    def release_change(self) -> None: ...


class ToolRun(AskingRun, Protocol):
    """What a tool call reads and does of its run (``runs.run.Run``, checked by the type checker)."""

    session_id: Optional[str]
    job: Any  # NorFab's Job the run answers (a delegate's question goes through it); None off a job
    artifacts: List[ArtifactSummary]  # every tool result kept as evidence
    warnings: List[str]

    @property
    def budget(self) -> ChangeBudget: ...

    @property
    def case_id(self) -> Optional[str]: ...

    @property
    def started(self) -> float: ...

    def admit_tool_call(self, tool: str, digest: str) -> Optional[str]: ...

    def touched(self, devices: Set[str]) -> None: ...

    def record_tool_call(self, summary: ToolCallSummary) -> None: ...


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
