"""
What a crash left open, closed at the worker's start: pending approvals
expire and unfinished runs end, each with its audit entry. A run cut while a
change job was in flight (the change envelope's markers) ends
``outcome_unknown`` and names the job and its devices; any other ends
``interrupted``. Nothing of them runs again.
"""

import time
from typing import Any, Callable, List, Sequence, Tuple

from ...models import (
    ApprovalInfo,
    InvokeResultData,
    OutcomeUnknown,
    RunEvent,
    RunStateData,
    StopReason,
    ToolCallSummary,
)
from . import approvals, runs
from .runs import iso

CUT_NOTE = "the worker stopped (crash or kill) before the run finished; it was not resumed"
APPROVAL_CUT_NOTE = "ended by the worker restart: its run is gone and the call was never made"
MID_CHANGE_NOTE = (
    "change job {job} of tool {tool} on {devices} was in flight: its outcome is unknown, it is not sent again; "
    "an operator must check the devices and acknowledge it"
)


def settle(
    db: Any, worker: str, unknown: Sequence[OutcomeUnknown], append: Callable[..., None]
) -> Tuple[List[str], List[str]]:
    """Close ``worker``'s open approvals and runs in the caller's transaction; (run ids, approval ids)."""
    now = time.time()
    cut_approvals = []
    for info in approvals.pending(db, worker):
        info = info.model_copy(update={"state": "expired", "decided": iso(now), "note": APPROVAL_CUT_NOTE})
        approvals.save(db, info)
        details = {"approval_id": info.approval_id, "note": APPROVAL_CUT_NOTE}
        append(db, "approval.expired", info.agent, info.run_id, None, details)
        cut_approvals.append(info.approval_id)
    cut_runs = []
    for row in runs.unfinished(db, worker):
        changes = [change for change in unknown if change.run_id == row["run_id"]]
        state = cut(row, approvals.of_run(db, row["run_id"]), now, changes)
        ended: dict[str, Any] = {"stop_reason": state.stop_reason, "note": CUT_NOTE}
        if changes:
            ended["outcome_unknown"] = [{"job_uuid": c.job_uuid, "devices": c.devices} for c in changes]
        runs.finish(db, state, now)
        append(db, "run.ended", row["agent"], row["run_id"], row["client"], ended)
        cut_runs.append(row["run_id"])
    return cut_runs, cut_approvals


def cut(row: Any, asked: List[ApprovalInfo], now: float, changes: List[OutcomeUnknown]) -> RunStateData:
    """The state of a run the worker's crash cut: what its record knew, and why it ended."""
    reason = (StopReason.outcome_unknown if changes else StopReason.interrupted).value
    warnings = [CUT_NOTE] + [
        MID_CHANGE_NOTE.format(job=c.job_uuid, tool=c.tool, devices=", ".join(c.devices)) for c in changes
    ]
    calls = [ToolCallSummary.model_validate(call) for call in runs.calls_so_far(row)]
    result = InvokeResultData(
        response="",
        run_id=row["run_id"],
        session_id=row["session_id"],
        agent=row["agent"],
        worker=row["worker"],
        stop_reason=reason,
        tool_calls=calls,
        warnings=warnings,
        approvals=asked,
    )
    return RunStateData(
        run_id=row["run_id"],
        agent=row["agent"],
        worker=row["worker"],
        session_id=row["session_id"],
        state="finished",
        stop_reason=reason,
        started=iso(row["started"]),
        events=[RunEvent(time=iso(now), message=f"run {row['run_id']} {reason}: {CUT_NOTE}", severity="WARNING")],
        approvals=asked,
        result=result,
        client=row["client"],
        schedule_id=row["schedule_id"],
        finished=iso(now),
    )
