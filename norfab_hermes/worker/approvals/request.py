"""
What an approval is asked with: the call (``Ask``: tool, target, exact
arguments, who may approve, how many must), a change's question
(``ChangeAsk``: devices, preview, digest), the run asking (``AskingRun``) and
what comes back (``Verdict``: who approved, or why not).
"""

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Protocol


@dataclass
class ChangeAsk:
    """What an operator is shown to approve a change: its devices, digest and preview per device."""

    devices: List[str]
    digest: str
    preview: Dict[str, str]
    what: str = "run tool"  # what the agent wants to do with the tool
    header: str = ""  # e.g. the workflow file and its sha256

    def shown(self) -> str:
        """The lines above the question. Device text is indented and marked, so it cannot pass for the question."""
        lines = [f"Change {self.digest} on {', '.join(self.devices) or 'no named device'}{self.header}."]
        if self.preview:
            lines.append("Preview, per device:")
            for device, text in self.preview.items():
                lines.append(f"  {device}:")
                lines += [f"  | {line}" for line in text.splitlines() or [""]]
        return "\n".join(lines)


@dataclass(frozen=True)
class Ask:
    """One call that needs approval, as every way of asking sees it."""

    agent: str
    tool: str
    task: str  # service.task
    workers: Any
    arguments: Dict[str, Any]
    approvers: List[str]  # who may decide; empty: any approver
    required: int  # different approvers needed
    change: Optional[ChangeAsk] = None

    @property
    def target(self) -> str:
        return f"{self.task} on {self.workers}"


@dataclass(frozen=True)
class Verdict:
    """How an approval ended for the call: who approved it, or why it may not run."""

    approved_by: Optional[str] = None
    refusal: Optional[str] = None


class AskingRun(Protocol):
    """What asking for an approval reads of the run (``runs.run.Run``, checked by the type checker)."""

    run_id: str
    session_key: str
    approvers: List[str]  # the agent's, for tools that name none
    approvals_required: int
    approval_timeout: float
    approvals: List[Any]  # the run's approvals, asked so far
    stop_reason: Optional[str]
    stop_message: str

    @property
    def agent(self) -> str: ...

    @property
    def client(self) -> Optional[str]: ...

    @property
    def interactive(self) -> bool: ...

    @property
    def schedule_id(self) -> Optional[str]: ...

    @property
    def lineage(self) -> Any: ...

    def remaining(self) -> float: ...

    def event(self, message: str, severity: str = "INFO", **kwargs: Any) -> None: ...
