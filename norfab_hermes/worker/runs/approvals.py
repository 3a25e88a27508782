"""
The approval inbox: approval-gated tool calls of runs nobody is attached to.

A run in the background, a scheduled check, or a REST or MCP call has no
terminal to ask. When such a run reaches a tool that needs approval and its
agent sets ``approval_timeout``, the call parks here - the tool, its exact
arguments, where it goes and a digest of them - for at most that long,
within the run's budget. Whoever can reach the worker decides it with the
``approve`` or ``deny`` task; who decided, when and why is kept in the
run's record. Nobody deciding in time is a refusal, recorded too.
"""

import threading
import time
import uuid
from datetime import datetime, timezone
from typing import Any, Dict, List, Optional

from ...errors import InvalidRequest, UnknownApproval
from ...models import ApprovalInfo, arguments_digest
from .run import Run, now_iso

DECIDED_KEPT = 500  # decided approvals findable by id


class ApprovalInbox:
    """Pending and decided approvals of one worker's runs."""

    def __init__(self, worker_name: str) -> None:
        self.worker_name = worker_name
        self._approvals: Dict[str, ApprovalInfo] = {}
        self._decided: Dict[str, threading.Event] = {}
        self._lock = threading.Lock()

    def request(
        self,
        run: Run,
        tool: str,
        target: str,
        arguments: Dict[str, Any],
        preview: Optional[Dict[str, str]] = None,
        digest: Optional[str] = None,
        devices: Optional[List[str]] = None,
    ) -> ApprovalInfo:
        """Park a call until it is decided or expires; the approval as it ended.

        A change comes with its devices, preview and digest: the decision is
        for that change, and what runs must match it (``tools/change.py``).
        """
        wait = min(run.approval_timeout, run.remaining() - 1.0)
        requested = time.time()
        approval = ApprovalInfo(
            approval_id=uuid.uuid4().hex[:12],
            run_id=run.run_id,
            agent=run.agent,
            worker=self.worker_name,
            tool=tool,
            target=target,
            arguments=arguments,
            arguments_digest=arguments_digest(arguments),
            state="pending",
            requested=now_iso(),
            expires=datetime.fromtimestamp(requested + max(wait, 0), timezone.utc).isoformat(timespec="milliseconds"),
            devices=devices or [],
            preview=preview or {},
            change_digest=digest,
        )
        decided = threading.Event()
        with self._lock:
            self._approvals[approval.approval_id] = approval
            self._decided[approval.approval_id] = decided
        run.approvals.append(approval)
        run.event(
            f"waiting for approval {approval.approval_id}: {tool} ({target}) with {approval.arguments_digest}, "
            f"for at most {max(wait, 0):.0f}s",
            severity="WARNING",
        )
        while not decided.wait(0.2) and time.time() - requested < wait and run.stop_reason is None:
            pass
        with self._lock:
            if approval.state == "pending":
                approval.state = "expired"
                approval.decided = now_iso()
                approval.note = f"the run stopped: {run.stop_message}" if run.stop_reason else "nobody decided in time"
            self._decided.pop(approval.approval_id, None)
            self._prune()
        run.event(f"approval {approval.approval_id} {approval.state}" + (f": {approval.note}" if approval.note else ""))
        return approval

    def decide(self, approval_id: str, approve: bool, by: Optional[str], note: Optional[str]) -> ApprovalInfo:
        with self._lock:
            approval = self._approvals.get(approval_id)
            if approval is None:
                raise UnknownApproval(f"approval '{approval_id}' is not known on worker '{self.worker_name}'")
            if approval.state != "pending":
                raise InvalidRequest(f"approval_id: approval '{approval_id}' is already {approval.state}")
            approval.state = "approved" if approve else "denied"
            approval.decided, approval.decided_by, approval.note = now_iso(), by, note
            self._decided[approval_id].set()
        return approval

    def pending(self, agent: Optional[str] = None) -> List[ApprovalInfo]:
        with self._lock:
            return [a for a in self._approvals.values() if a.state == "pending" and agent in (None, a.agent)]

    def _prune(self) -> None:
        decided = [key for key, a in self._approvals.items() if a.state != "pending"]
        for key in decided[: max(0, len(decided) - DECIDED_KEPT)]:
            del self._approvals[key]
