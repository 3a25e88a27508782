"""
The durable record of a worker's runs: run summaries for ``get_runs``, the
audit log's entries for ``get_audit`` and what ``verify_audit`` found, with
the inputs of those tasks.
"""

import re
from datetime import datetime, timedelta, timezone
from typing import Any, Dict, List, Union

from norfab.models import Result
from pydantic import Field, NonNegativeInt, StrictStr, field_validator

from .base import CaseId, StrictModel, TaskInput
from .results import CASE_ID, Provenance, RunState, RunUsage, StopReason

AGE_RE = re.compile(r"^(\d+)\s*([smhd])$")
AGE_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}
PREVIEW_CHARS = 200  # of instructions and responses in a run summary


def moment(text: str) -> str:
    """An ISO time, or an age such as 30m, 12h or 7d before now, as an ISO time in UTC."""
    age = AGE_RE.match(text.strip())
    if age:
        then = datetime.now(timezone.utc) - timedelta(**{AGE_UNITS[age.group(2)]: int(age.group(1))})
        return then.isoformat(timespec="milliseconds")
    try:
        then = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"'{text}' is neither an ISO time (2026-12-01T02:00) nor an age (30m, 12h, 7d)") from None
    then = then if then.tzinfo else then.replace(tzinfo=timezone.utc)
    return then.astimezone(timezone.utc).isoformat(timespec="milliseconds")


class TimeWindow(TaskInput):
    since: Union[None, StrictStr] = Field(None, description="From this ISO time, or an age before now: 30m, 12h, 7d")
    until: Union[None, StrictStr] = Field(None, description="Up to this ISO time, or an age before now")

    @field_validator("since", "until")
    @classmethod
    def _moment(cls, value: Union[None, str]) -> Union[None, str]:
        return None if value is None else moment(value)


class GetRunsInput(TimeWindow):
    agent: Union[None, StrictStr] = Field(None, description="Only this agent's runs")
    state: Union[None, RunState] = Field(None, description="Only runs in this state, e.g. finished")
    stop_reason: Union[None, StopReason] = Field(None, description="Only runs that ended so, e.g. token_budget")
    schedule_id: Union[None, StrictStr] = Field(None, description="Only runs of this schedule (its id)")
    decided_by: Union[None, StrictStr] = Field(None, description="Only runs with an approval this client decided")
    text: Union[None, StrictStr] = Field(
        None, min_length=1, description="Only runs whose instructions or response hold this text (any case)"
    )
    case_id: Union[None, CaseId] = Field(None, description="Only the runs of this case")
    model: Union[None, StrictStr] = Field(None, description="Only runs answered by this model id")
    provider: Union[None, StrictStr] = Field(None, description="Only runs answered through this provider")
    definition_digest: Union[None, StrictStr] = Field(None, description="Only runs of this agent definition")
    hermes_version: Union[None, StrictStr] = Field(None, description="Only runs on this Hermes Agent version")
    norfab_hermes_version: Union[None, StrictStr] = Field(None, description="Only runs on this norfab-hermes version")
    limit: int = Field(50, ge=1, le=1000, description="Runs per page, newest first")
    offset: NonNegativeInt = Field(0, description="Runs to skip: next_offset of the previous page")


class GetAuditInput(TimeWindow):
    after: NonNegativeInt = Field(0, description="Entries after this sequence number: next_after of the last page")
    limit: int = Field(1000, ge=1, le=10000, description="Entries per page, oldest first unless newest_first")
    agent: Union[None, StrictStr] = Field(None, description="Only this agent's entries")
    run_id: Union[None, StrictStr] = Field(None, description="Only this run's entries")
    kind: Union[None, StrictStr] = Field(None, description="Only entries of this kind, e.g. approval.decided")
    before: Union[None, NonNegativeInt] = Field(
        None, description="Entries before this sequence number: next_before of the last newest-first page"
    )
    newest_first: bool = Field(False, description="The newest entries first (the last ones, paged backwards)")


class RunSummary(StrictModel):
    run_id: StrictStr = Field(..., description="Run id, for get_run")
    agent: StrictStr = Field(..., description="Agent name")
    worker: StrictStr = Field(..., description="Worker that ran it")
    state: RunState = Field(..., description="queued, running, waiting_for_approval or finished")
    stop_reason: Union[None, StrictStr] = Field(None, description="Why it ended, once finished")
    started: StrictStr = Field(..., description="ISO time it was accepted")
    finished: Union[None, StrictStr] = Field(None, description="ISO time it ended")
    duration: Union[None, float] = Field(None, description="Seconds from accepted to ended")
    session_id: Union[None, StrictStr] = Field(None, description="Session, readable with get_session")
    schedule_id: Union[None, StrictStr] = Field(None, description="Schedule that started it")
    job_uuid: Union[None, StrictStr] = Field(None, description="NorFab job of the invoke")
    client: Union[None, StrictStr] = Field(None, description="NorFab client that asked; None for a schedule")
    parent_run_id: Union[None, StrictStr] = Field(None, description="For a delegated run: the run that asked")
    instructions: StrictStr = Field("", description="Start of what the agent was asked")
    response: StrictStr = Field("", description="Start of its answer")
    tool_calls: int = Field(0, description="Tool calls made")
    decided_by: List[StrictStr] = Field([], description="Clients that decided its approvals")
    usage: RunUsage = Field(RunUsage(), description="Token and request usage")
    case_id: Union[None, StrictStr] = Field(None, description=CASE_ID)
    provenance: Union[None, Provenance] = Field(None, description="Model, versions and definition digest of the run")


SHARED_RECORD = (
    "Id of the fleet's shared record (PostgreSQL) that answered, holding every worker's runs and one audit chain; "
    "None: the worker's own record"
)


class RunsPage(StrictModel):
    runs: List[RunSummary] = Field([], description="Runs, newest first")
    total: int = Field(0, description="Runs matching the filters on this worker")
    next_offset: Union[None, int] = Field(None, description="Offset of the next page; None on the last one")
    record: Union[None, StrictStr] = Field(None, description=SHARED_RECORD)


class AuditEntry(StrictModel):
    seq: int = Field(..., description="Sequence number, from 1, without gaps")
    time: StrictStr = Field(..., description="ISO time")
    worker: StrictStr = Field(..., description="Worker whose log holds it")
    kind: StrictStr = Field(..., description="What happened, e.g. run.started, tool.call, approval.decided")
    agent: Union[None, StrictStr] = Field(None, description="Agent concerned")
    run_id: Union[None, StrictStr] = Field(None, description="Run concerned")
    actor: Union[None, StrictStr] = Field(None, description="NorFab client that asked for it, when one did")
    data: Dict[StrictStr, Any] = Field({}, description="The details of the kind")
    prev: StrictStr = Field(..., description="Hash of the entry before")
    hash: StrictStr = Field(..., description="sha256 of prev and this entry's fields")


class AuditPage(StrictModel):
    entries: List[AuditEntry] = Field([], description="Entries, oldest first (newest first when asked)")
    next_after: Union[None, int] = Field(None, description="after of the next page; None on the last one")
    next_before: Union[None, int] = Field(
        None, description="before of the next (older) page of a newest-first read; None on the last one"
    )
    record: Union[None, StrictStr] = Field(None, description=SHARED_RECORD)


class AuditVerifyData(StrictModel):
    worker: StrictStr = Field(..., description="Worker whose log was checked")
    ok: bool = Field(..., description="Every entry is intact and in its place")
    entries: int = Field(0, description="Entries checked")
    first_seq: Union[None, int] = Field(None, description="First entry kept (older ones were pruned)")
    last_seq: Union[None, int] = Field(None, description="Last entry")
    head: Union[None, StrictStr] = Field(None, description="Hash of the last entry: keep it to prove the log later")
    problems: List[StrictStr] = Field([], description="What is wrong, entry by entry")
    record: Union[None, StrictStr] = Field(None, description=SHARED_RECORD)


class GetRunsResult(Result):
    result: Union[None, RunsPage] = Field(None, description="A page of run summaries")


class GetAuditResult(Result):
    result: Union[None, AuditPage] = Field(None, description="A page of audit entries")


class VerifyAuditResult(Result):
    result: Union[None, AuditVerifyData] = Field(None, description="What the check of the hash chain found")
