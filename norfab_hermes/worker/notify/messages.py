"""
What each event an operator must know about says, as a ``Message``: one
line of what happened, the lines under it, and what to run to open it.

Everything here is rendered from records the worker made; device output (a
change's preview) is cut, and every channel escapes it for its own format.
"""

import hashlib
import uuid
from typing import Any, Dict, List, Optional

from ...models import ApprovalInfo, ChangeRecord, OutcomeUnknown, ScheduleRun, now_iso
from .channel import Message

DIFF_LINES = 40  # of a change's preview on a card; the rest is one command away
APPROVAL_KINDS = {"requested": "approval_requested", "decided": "approval_decided", "expired": "approval_expired"}


def _message(kind: str, key: str, agent: str, worker: str, summary: str, reference: str, **fields: Any) -> Message:
    return Message(uuid.uuid4().hex, kind, key, agent, worker, summary, reference, now_iso(), **fields)


def cut_diff(preview: Dict[str, Any], reference: str) -> Optional[str]:
    """A change's preview per device, at most DIFF_LINES lines, saying where the whole is."""
    lines: List[str] = []
    for device, text in preview.items():
        lines += [f"--- {device}", *str(text).splitlines()]
    if not lines:
        return None
    more = len(lines) - DIFF_LINES
    return "\n".join(lines[:DIFF_LINES] + ([f"... {more} more lines: {reference}"] if more > 0 else []))


def approval(info: ApprovalInfo, step: str) -> Optional[Message]:
    """The card of an approval (requested), and its update (decided, expired); None for other steps."""
    kind = APPROVAL_KINDS.get(step)
    if kind is None:  # partly_approved: the card stays pending until the last approver decides
        return None
    what = f"{info.tool} on {', '.join(info.devices)}" if info.devices else info.tool
    if kind == "approval_requested":
        summary = f"approval {info.approval_id} waits: {what}" + (
            f", asked by {info.requested_by}" if info.requested_by else ""
        )
    else:
        by = f" by {info.decided_by}" if info.decided_by else ""
        summary = f"approval {info.approval_id} {info.state}{by}: {what}" + (f" ({info.note})" if info.note else "")
    details = [f"run {info.run_id} of agent {info.agent} on worker {info.worker}", f"target: {info.target}"]
    if info.change_digest:
        details.append(f"change digest: {info.change_digest}")
    details.append(f"arguments digest: {info.arguments_digest}")
    if kind == "approval_requested":
        deciders = info.may_decide or info.approvers
        details.append(f"who may decide: {', '.join(deciders) if deciders else 'any approver'}")
        details.append(f"expires: {info.expires}")
        details.append(f"decide: hermes approve {info.approval_id}  |  hermes deny {info.approval_id}")
    reference = f"hermes approvals agent {info.agent}"
    return _message(
        kind,
        f"approval:{info.approval_id}",
        info.agent,
        info.worker,
        summary,
        reference,
        run_id=info.run_id,
        details=details,
        diff=cut_diff(info.preview, reference) if kind == "approval_requested" else None,
        approval_id=info.approval_id,
        data=info.model_dump(exclude={"arguments", "preview"}),
    )


def schedule_run(agent: str, worker: str, run: ScheduleRun, kind: str) -> Message:
    """A watched schedule's run that regressed or recovered, or the run that made a schedule failing."""
    unmet = [c for c in run.criteria if not c.met]
    if kind == "regressed":
        summary = f"schedule {run.schedule_id} of {agent} regressed: " + "; ".join(c.criterion for c in unmet)
    elif kind == "recovered":
        summary = f"schedule {run.schedule_id} of {agent} recovered: every criterion is met again"
    else:
        summary = f"schedule {run.schedule_id} of {agent} keeps failing: " + "; ".join(run.warnings[:2])
    details = [f"{'met' if c.met else 'NOT met'}: {c.criterion} ({c.detail})" for c in run.criteria]
    details += [f"finding: {line}" for line in run.response.strip().splitlines()[:5]]
    reference = f"hermes run {run.run_id}" if run.run_id else f"hermes schedule history agent {agent}"
    return _message(
        kind,
        f"schedule:{agent}:{run.schedule_id}:{run.due or run.started}",
        agent,
        worker,
        summary,
        reference,
        run_id=run.run_id,
        evidence=[a.artifact_id for a in run.artifacts],
        details=details,
        data=run.model_dump(include={"schedule_id", "status", "due", "started", "run_id", "session_id"}),
    )


def change(
    agent: str, worker: str, run_id: str, case: Optional[str], tool: str, job: str, record: ChangeRecord
) -> Message:
    """A change that was rolled back or whose outcome nobody knows."""
    devices = ", ".join(record.devices) or "no named device"
    if record.outcome == "rolled_back":
        kind, summary = (
            "rolled_back",
            f"change {record.digest} by {tool} on {devices} failed its check and was rolled back",
        )
    else:
        kind, summary = (
            "outcome_unknown",
            f"change {record.digest} by {tool} on {devices}: outcome unknown, acknowledge it",
        )
    details = [f"run {run_id} of agent {agent}, NorFab job {job}"]
    if record.verify is not None:
        details.append(f"check: {record.verify.model_dump_json(exclude_none=True)[:300]}")
    return _message(
        kind,
        f"change:{job}",
        agent,
        worker,
        summary,
        f"hermes run {run_id}",
        run_id=run_id,
        case=case,
        details=details,
        data={"job_uuid": job, **record.model_dump(include={"devices", "digest", "outcome"})},
    )


def cut_change(worker: str, change: OutcomeUnknown) -> Message:
    """A change the worker's last stop cut mid-flight."""
    devices = ", ".join(change.devices)
    return _message(
        "outcome_unknown",
        f"change:{change.job_uuid}",
        change.agent,
        worker,
        f"change job {change.job_uuid} by {change.tool} on {devices} was in flight when the worker stopped: "
        "outcome unknown, acknowledge it",
        f"hermes run {change.run_id}",
        run_id=change.run_id,
        data=change.model_dump(),
    )


def budget(kind: str, agent: str, worker: str, text: str, day: str) -> Message:
    return _message(kind, f"budget:{agent}:{day}", agent, worker, text, f"hermes status agent {agent}")


def unavailable(agent: str, worker: str, reason: str) -> Message:
    """An agent that became unavailable: each time it does (a new reason, or again after it was back)."""
    return _message(
        "agent_unavailable",
        f"agent:{agent}:{now_iso()}:{hashlib.sha256(reason.encode()).hexdigest()[:12]}",
        agent,
        worker,
        f"agent {agent} is unavailable on {worker}: {reason}",
        f"hermes status agent {agent}",
    )


def test(channel: str, worker: str, text: Optional[str] = None) -> Message:
    return _message(
        "test",
        f"test:{uuid.uuid4().hex}",
        "*",
        worker,
        f"test message to channel {channel} from worker {worker}" + (f": {' '.join(text.split())}" if text else ""),
        "hermes status",
    )
