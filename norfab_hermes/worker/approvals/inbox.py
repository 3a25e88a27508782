"""
The approval inbox: approval-gated tool calls of runs nobody is attached to.

A run in the background, a scheduled check, or a REST or MCP call has no
terminal to ask. When such a run reaches a tool that needs approval and its
agent sets ``approval_timeout``, the call parks here - the tool, its exact
arguments, where it goes and a digest of them; for a change also its
devices, preview and change digest - for at most that long,
within the run's budget. A client among the tool's (or agent's)
``approvers`` decides it with the ``approve`` or ``deny`` task; anyone else
is refused and the attempt recorded. Nobody deciding in time is a refusal,
recorded too. Every approval and decision goes to the run records as it
happens (``records``), so that it outlives a restart.
"""

import logging
import threading
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Dict, List, NoReturn, Optional, Protocol, Sequence

from ...errors import InvalidRequest, NotAllowed, UnknownApproval
from ...models import ApprovalInfo, arguments_digest, now_iso
from ..records.store import quietly
from . import deciders
from .channel import ApprovalChannel
from .request import Ask, AskingRun, Verdict

log = logging.getLogger(__name__)

DECIDED_KEPT = 500  # decided approvals kept in memory; older ones are read from the records


class ApprovalLog(Protocol):
    """Where approvals are recorded (``records.store.Records``)."""

    def approval(self, info: ApprovalInfo, kind: str, actor: Optional[str] = None) -> None: ...

    def approval_info(self, approval_id: str) -> Optional[ApprovalInfo]: ...

    def note(
        self,
        kind: str,
        agent: Optional[str] = None,
        run_id: Optional[str] = None,
        actor: Optional[str] = None,
        **data: Any,
    ) -> None:
        """An audit entry; never raises (``records.store.Records.note``)."""


@dataclass(frozen=True)
class Decision:
    state: str  # approved, denied or expired
    decided: str  # ISO time
    decided_by: Optional[str]
    note: Optional[str]


class ApprovalRecord:
    """One approval as it stands: the request, made once, and its decision once there is one."""

    def __init__(self, request: ApprovalInfo) -> None:
        self.request = request
        self.decision: Optional[Decision] = None
        self.approved_by: List[str] = []  # approvals so far, while approvals_required is not reached
        self.decided = threading.Event()

    @property
    def state(self) -> str:
        return self.decision.state if self.decision else self.request.state

    def info(self, may_decide: Optional[List[str]] = None) -> ApprovalInfo:
        update = {"approved_by": list(self.approved_by), "may_decide": may_decide or []}
        return self.request.model_copy(update={**update, **(vars(self.decision) if self.decision else {})})


class ApprovalInbox:
    """Pending and decided approvals of one worker's runs."""

    def __init__(
        self,
        worker_name: str,
        records: Optional[ApprovalLog] = None,
        identity: Any = None,
        channels: Sequence[ApprovalChannel] = (),
    ) -> None:
        self.worker_name = worker_name
        self.records = records
        self.identity = identity  # the worker's IdentityGate: with operators, roles and four eyes apply
        self.channels = list(channels)  # told of each step, after the record
        self._approvals: Dict[str, ApprovalRecord] = {}
        self._lock = threading.Lock()

    def ask(self, run: AskingRun, ask: Ask) -> Verdict:
        """Park a call until it is decided or expires (``AskChannel``): who approved it, or why not."""
        approval = self.request(run, ask)
        note = f" ({approval.note})" if approval.note else ""
        if approval.state == "approved":
            return Verdict(approved_by=approval.decided_by or "an operator")
        if approval.state == "denied":
            return Verdict(refusal=f"{approval.decided_by or 'an operator'} denied this call{note}; it was not made")
        return Verdict(
            refusal=f"this tool needs the operator's approval: approval {approval.approval_id} expired{note}; "
            "the call was not made"
        )

    def request(self, run: AskingRun, ask: Ask) -> ApprovalInfo:
        """Park a call until it is decided or expires; the approval as it ended.

        A change comes with its devices, preview and digest: the decision is
        for that change, and what runs must match it (``tools/change.py``).
        """
        wait = min(run.approval_timeout, run.remaining() - 1.0)
        requested = time.time()
        record = ApprovalRecord(self._asked(run, ask, requested + max(wait, 0)))
        tool, change, approvers = ask.tool, ask.change, ask.approvers
        approval_id = record.request.approval_id
        with self._lock:
            self._approvals[approval_id] = record
        run.approvals.append(record)
        self._record(record.info(), "requested")
        what = f"change {change.digest} on {', '.join(change.devices) or 'no named device'}, " if change else ""
        run.event(
            f"waiting for approval {approval_id}: {tool} ({ask.target}) with {record.request.arguments_digest}, "
            f"{what}for at most {max(wait, 0):.0f}s" + (f"; approvers: {', '.join(approvers)}" if approvers else ""),
            severity="WARNING",
        )
        while not record.decided.wait(0.2) and time.time() - requested < wait and run.stop_reason is None:
            pass
        with self._lock:
            expired = record.decision is None
            if expired:
                note = f"the run stopped: {run.stop_message}" if run.stop_reason else "nobody decided in time"
                record.decision = Decision("expired", now_iso(), None, note)
            self._prune()
        info = record.info()
        if expired:
            self._record(info, "expired")
        run.event(f"approval {approval_id} {info.state}" + (f": {info.note}" if info.note else ""))
        return info

    def answered(self, run: AskingRun, ask: Ask, approved: bool) -> None:
        """The run's own caller answered an approval at the terminal: recorded like an inbox decision."""
        record = ApprovalRecord(self._asked(run, ask, time.time()))
        state = "approved" if approved else "denied"
        record.decision = Decision(state, now_iso(), run.client, "answered by the run's caller")
        run.approvals.append(record)
        self._record(record.info(), "decided", run.client)

    def _asked(self, run: AskingRun, ask: Ask, expires: float) -> ApprovalInfo:
        change = ask.change
        shown = dict(devices=change.devices, preview=change.preview, change_digest=change.digest) if change else {}
        return ApprovalInfo(
            approval_id=uuid.uuid4().hex[:12],
            run_id=run.run_id,
            agent=run.agent,
            worker=self.worker_name,
            tool=ask.tool,
            target=ask.target,
            arguments=ask.arguments,
            arguments_digest=arguments_digest(ask.arguments),
            state="pending",
            requested=now_iso(),
            expires=datetime.fromtimestamp(expires, timezone.utc).isoformat(timespec="milliseconds"),
            approvers=list(ask.approvers),
            requested_by=run.client,
            approvals_required=ask.required,
            **shown,
        )

    def decide(
        self, approval_id: str, approve: bool, by: Optional[str], note: Optional[str], subject: Optional[str] = None
    ) -> ApprovalInfo:
        """A client's decision; NotAllowed for a client that is not among the approval's approvers.

        With operators, ``by`` is the verified operator and ``subject`` the digest its proof signed:
        it must be this approval's, the operator must hold approver for the agent, and may not
        approve a run it started (four eyes); approvals_required needs that many different approvers.
        """
        partial = False
        with self._lock:
            record = self._approvals.get(approval_id)
            if record is None:
                self._unknown(approval_id)
            request = record.request
            refusal = deciders.refusal(self.identity, request, record.approved_by, approve, by, subject)
            if refusal is None:
                if record.decision is not None:
                    raise InvalidRequest(f"approval_id: approval '{approval_id}' is already {record.state}")
                if approve and len(record.approved_by) + 1 < request.approvals_required:
                    record.approved_by.append(by or "an unnamed client")
                    partial = True
                else:
                    record.decision = Decision("approved" if approve else "denied", now_iso(), by, note)
                    record.decided.set()
        if refusal:
            log.warning(f"{self.worker_name} - Refused a decision: {refusal}")
            if self.records is not None:
                self.records.note(
                    "approval.refused",
                    request.agent,
                    request.run_id,
                    by,
                    approval_id=approval_id,
                    decision="approve" if approve else "deny",
                    approvers=request.approvers,
                )
            raise NotAllowed(refusal)
        info = record.info(self._may_decide(record))
        self._record(info, "partly_approved" if partial else "decided", by)
        return info

    def _may_decide(self, record: ApprovalRecord) -> List[str]:
        return deciders.may_decide(self.identity, record.request, record.approved_by, record.state == "pending")

    def decide_from_channel(
        self, approval_id: str, approve: bool, operator: str, note: Optional[str], channel: str
    ) -> ApprovalInfo:
        """A decision a channel read from a user it authenticated (a Matrix homeserver's) and mapped to
        ``operator``: the channel stands in for the proof, everything else is checked as for nf#
        (the operator's approver role for the agent, four eyes, the approvers, still pending)."""
        with self._lock:
            record = self._approvals.get(approval_id)
        if deciders.signed(self.identity) and operator not in self.identity.operators:
            raise NotAllowed(
                f"'{operator}' is not an operator of worker '{self.worker_name}': channel {channel} maps its user to "
                "a name the worker's operators do not have"
            )
        subject = deciders.expected_subject(record.request) if record else None
        info = self.decide(approval_id, approve, operator, note, subject)
        if self.records is not None:
            self.records.note(
                "approval.channel", info.agent, info.run_id, operator, approval_id=approval_id, channel=channel
            )
        return info

    def pending(self, agent: Optional[str] = None) -> List[ApprovalInfo]:
        with self._lock:
            return [
                r.info(self._may_decide(r))
                for r in self._approvals.values()
                if r.state == "pending" and agent in (None, r.request.agent)
            ]

    def _unknown(self, approval_id: str) -> NoReturn:
        """Raise why an approval not in memory cannot be decided: decided long ago, or not this worker's."""
        known = self.records.approval_info(approval_id) if self.records is not None else None
        if known is None or known.worker != self.worker_name:  # a shared record holds other workers' too
            raise UnknownApproval(f"approval '{approval_id}' is not known on worker '{self.worker_name}'")
        raise InvalidRequest(
            f"approval_id: approval '{approval_id}' is already {known.state}"
            + (f" ({known.note})" if known.note else "")
        )

    def _record(self, info: ApprovalInfo, kind: str, actor: Optional[str] = None) -> None:
        """Every step of an approval passes here: the record first, then each channel."""
        # a records or channel failure is logged: the decision itself stands
        if self.records is not None:
            quietly(self.worker_name, "an approval", self.records.approval, info, kind, actor)
        for channel in self.channels:
            quietly(self.worker_name, f"an approval to channel {type(channel).__name__}", channel.approval, info, kind)

    def _prune(self) -> None:
        decided = [key for key, r in self._approvals.items() if r.state != "pending"]
        for key in decided[: max(0, len(decided) - DECIDED_KEPT)]:
            del self._approvals[key]
