"""
What one tool call carries: the refusal the model reads, the trace of what the call started, and
the question an operator is shown to approve a change.
"""

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from ...models import ChangeRecord


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
