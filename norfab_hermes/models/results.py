"""
What the hermes service's NorFab tasks return: the run envelope, agents,
sessions, schedules, approvals and the worker's status, each inside a NorFab
``Result``.
"""

import hashlib
import json
from enum import Enum
from typing import Any, Dict, List, Literal, Union

from norfab.models import Result
from pydantic import (
    Field,
    PositiveInt,
    StrictBool,
    StrictStr,
)

from .base import StrictModel
from .carryover import ArtifactSummary, Criterion, CriterionResult
from .changes import BreakerState, ChangeRecord, ChangesStatus, OutcomeUnknown
from .definitions import Lineage
from .notify import ChannelStatus

# the closed sets of states and outcomes results carry
ToolCallStatus = Literal["completed", "failed", "refused"]
ApprovalState = Literal["pending", "approved", "denied", "expired"]
RunState = Literal["queued", "running", "waiting_for_approval", "finished"]
AgentState = Literal["running", "stopped", "invalid"]
AgentOwner = Literal["inventory", "runtime", "native"]
ScheduleRunStatus = Literal[
    "ok", "failed", "missed", "interrupted", "timeout", "skipped", "regressed", "recovered", "queued"
]


class StopReason(str, Enum):
    completed = "completed"
    interrupted = "interrupted"
    run_timeout = "run_timeout"
    max_turns = "max_turns"
    provider_error = "provider_error"
    tool_budget = "tool_budget"
    repeated_call = "repeated_call"
    token_budget = "token_budget"  # the run's max_tokens
    daily_budget = "daily_budget"  # the agent's daily_tokens or daily_cost_usd
    outcome_unknown = "outcome_unknown"  # the worker stopped while a change job was in flight
    failed = "failed"


def arguments_digest(arguments: Any) -> str:
    """A short, stable fingerprint of a tool call's arguments (what summaries show instead of them)."""
    return hashlib.sha256(json.dumps(arguments, sort_keys=True, default=str).encode()).hexdigest()[:12]


class DelegatedRun(StrictModel):
    """The run a delegate tool call started on the other agent."""

    agent: StrictStr = Field(..., description="Agent asked")
    worker: StrictStr = Field(..., description="Worker that ran it and owns its session")
    run_id: Union[None, StrictStr] = Field(None, description="Its run id, once it started")
    session_id: Union[None, StrictStr] = Field(
        None, description="Its session, readable with get_session on that worker"
    )
    stop_reason: Union[None, StrictStr] = Field(None, description="Why it ended")


class ToolCallSummary(StrictModel):
    tool: StrictStr = Field(..., description="Tool name as the model saw it")
    service: Union[None, StrictStr] = Field(None, description="NorFab service of a NorFab tool")
    task: Union[None, StrictStr] = Field(None, description="NorFab task of a NorFab tool")
    workers: Union[None, StrictStr, List[StrictStr]] = Field(None, description="Routing selector used")
    arguments_digest: StrictStr = Field(..., description="sha256 prefix of the call's arguments")
    job_uuid: Union[None, StrictStr] = Field(None, description="Child NorFab job UUID")
    status: ToolCallStatus = Field(..., description="completed, failed or refused")
    duration: float = Field(..., description="Seconds")
    truncated: StrictBool = Field(False, description="Result was cut to the size limit")
    error: Union[None, StrictStr] = Field(None, description="Why the call failed or was refused")
    delegated: Union[None, DelegatedRun] = Field(None, description="For a delegate tool: the run it started")
    change: Union[None, ChangeRecord] = Field(
        None, description="For a change: its devices, preview, approved digest, verification and rollback"
    )


class RunUsage(StrictModel):
    api_calls: int = Field(0, description="Model requests made by the run")
    input_tokens: int = Field(0, description="Prompt tokens")
    output_tokens: int = Field(0, description="Completion tokens")
    total_tokens: int = Field(0, description="All tokens")
    cost_usd: Union[None, float] = Field(None, description="Estimated cost when the provider's pricing is known")


class ApprovalInfo(StrictModel):
    approval_id: StrictStr = Field(..., description="Approval id, for approve and deny")
    run_id: StrictStr = Field(..., description="Run waiting for it")
    agent: StrictStr = Field(..., description="Agent of the run")
    worker: StrictStr = Field(..., description="Worker of the run")
    tool: StrictStr = Field(..., description="Tool the agent wants to call")
    target: StrictStr = Field(..., description="NorFab service.task and workers the call goes to")
    arguments: Dict[StrictStr, Any] = Field({}, description="The call's exact arguments")
    arguments_digest: StrictStr = Field(..., description="sha256 prefix of the arguments")
    state: ApprovalState = Field(..., description="pending, approved, denied or expired")
    requested: StrictStr = Field(..., description="ISO time it was asked")
    expires: StrictStr = Field(..., description="ISO time it is refused unless decided")
    decided: Union[None, StrictStr] = Field(None, description="ISO time of the decision or expiry")
    decided_by: Union[None, StrictStr] = Field(None, description="NorFab client that approved or denied")
    note: Union[None, StrictStr] = Field(None, description="The decider's note")
    approvers: List[StrictStr] = Field([], description="NorFab clients that may decide it; empty: any client")
    requested_by: Union[None, StrictStr] = Field(None, description="Who started the run (operator or client)")
    approvals_required: PositiveInt = Field(1, description="Different approvers needed before the call runs")
    approved_by: List[StrictStr] = Field([], description="Who has approved so far, while more approvals are needed")
    may_decide: List[StrictStr] = Field(
        [], description="With operators: who may still decide it (approvers for its agent, not its requester)"
    )
    devices: List[StrictStr] = Field([], description="For a change: the devices it names")
    preview: Dict[StrictStr, StrictStr] = Field(
        {}, description="For a change: what it would do, per device (dry run or a read-only tool)"
    )
    change_digest: Union[None, StrictStr] = Field(
        None, description="For a change: digest of tool, task arguments, targets and preview; what runs must match it"
    )


class InvokeResultData(StrictModel):
    response: StrictStr = Field(..., description="The agent's reply")
    run_id: StrictStr = Field(..., description="Run identifier, for interrupt")
    session_id: Union[None, StrictStr] = Field(None, description="Hermes session id, to continue the conversation")
    agent: StrictStr = Field(..., description="Agent (profile) name")
    worker: StrictStr = Field(..., description="Worker that ran the agent and owns the session")
    stop_reason: StopReason = Field(..., description="Why the run ended")
    tool_calls: List[ToolCallSummary] = Field([], description="Tool calls made by the run, in order")
    usage: RunUsage = Field(RunUsage(), description="Token and request usage")
    warnings: List[StrictStr] = Field([], description="Things the operator should know")
    approvals: List[ApprovalInfo] = Field([], description="Approvals the run waited for, and who decided them")
    lineage: Union[None, Lineage] = Field(
        None, description="For a run another agent asked: who asked, from the first run"
    )
    artifacts: List[ArtifactSummary] = Field([], description="Every tool result the run received, kept as evidence")
    structured_response: Any = Field(None, description="The answer parsed and checked against response_schema")
    structured_error: Union[None, StrictStr] = Field(
        None, description="Why there is no structured_response although a response_schema was given"
    )
    deduplicated: StrictBool = Field(False, description="The run an earlier request with the same dedupe_key started")


class Provenance(StrictModel):
    """What answered a run, to reproduce its conclusion: the model, the software, the agent's definition."""

    model: Union[None, StrictStr] = Field(None, description="Model id the agent's profile names")
    provider: Union[None, StrictStr] = Field(None, description="Model provider the agent's profile names")
    hermes_version: Union[None, StrictStr] = Field(None, description="Hermes Agent version of the worker")
    norfab_hermes_version: Union[None, StrictStr] = Field(None, description="norfab-hermes version of the worker")
    definition_digest: Union[None, StrictStr] = Field(
        None, description="sha256 prefix of the agent's definition and tools: runs of one definition share it"
    )


CASE_ID = "Case (incident) the run belongs to, as its caller named it"


class RunEvent(StrictModel):
    time: StrictStr = Field(..., description="ISO time")
    message: StrictStr = Field(..., description="What happened, as the job event said it")
    severity: StrictStr = Field("INFO", description="INFO or WARNING")


class RunStateData(StrictModel):
    run_id: StrictStr = Field(..., description="Run id")
    agent: StrictStr = Field(..., description="Agent name")
    worker: StrictStr = Field(..., description="Worker name")
    session_id: Union[None, StrictStr] = Field(None, description="Session, once known")
    state: RunState = Field(..., description="queued, running, waiting_for_approval or finished")
    stop_reason: Union[None, StrictStr] = Field(None, description="Why it ended, once finished")
    started: StrictStr = Field(..., description="ISO time the run was accepted")
    events: List[RunEvent] = Field([], description="Progress events from the offset asked for")
    next_offset: int = Field(0, description="Offset to ask for next time")
    approvals: List[ApprovalInfo] = Field([], description="Approvals asked so far")
    tool_calls: List[ToolCallSummary] = Field(
        [], description="Tool calls made so far, each once it ended, with its NorFab job; all of them once finished"
    )
    reply: StrictStr = Field("", description="The message the agent is writing now, as far as it got")
    result: Union[None, InvokeResultData] = Field(None, description="The full envelope, once finished")
    instructions: StrictStr = Field("", description="What the agent was asked")
    client: Union[None, StrictStr] = Field(None, description="NorFab client that asked; None for a schedule")
    schedule_id: Union[None, StrictStr] = Field(None, description="Schedule that started the run")
    finished: Union[None, StrictStr] = Field(None, description="ISO time the run ended")
    deduplicated: StrictBool = Field(False, description="The run an earlier request with the same dedupe_key started")
    outcome_unknown: List[OutcomeUnknown] = Field(
        [], description="Changes of the run whose outcome nobody knows (its worker stopped mid-change)"
    )
    case_id: Union[None, StrictStr] = Field(None, description=CASE_ID)
    provenance: Union[None, Provenance] = Field(None, description="Model, versions and definition digest of the run")


class AgentSummary(StrictModel):
    name: StrictStr = Field(..., description="Agent (profile) name")
    description: StrictStr = Field(..., description="Agent description")
    model: Union[None, StrictStr] = Field(None, description="Default model")
    provider: Union[None, StrictStr] = Field(None, description="Model provider")
    available: StrictBool = Field(..., description="Ready to take runs")
    error: Union[None, StrictStr] = Field(None, description="Why the agent is not available")
    worker: Union[None, StrictStr] = Field(None, description="Worker serving the agent")
    owner: Union[None, AgentOwner] = Field(
        None, description="inventory, runtime (created with manage_agent) or native (a profile made with Hermes)"
    )
    state: Union[None, AgentState] = Field(None, description="running, stopped or invalid")
    host_tools: List[StrictStr] = Field(
        [],
        description="Tools reaching the worker host (shell, files, web, ...) the worker's inventory grants the agent",
    )
    tools: Dict[StrictStr, Any] = Field(
        {},
        description="Each tool's class and why: {class: read_only, change or forbidden, reason: ...}; "
        "a change always takes the change envelope",
    )


class AgentDetails(AgentSummary):
    instructions: StrictStr = Field(..., description="Effective instructions (SOUL.md)")
    toolsets: List[StrictStr] = Field([], description="Enabled toolsets")
    tools: Dict[StrictStr, Any] = Field(
        {}, description="NorFab tools: definition, class and reason, the schema the model sees, error"
    )
    run_timeout: float = Field(..., description="Run wall-clock budget, seconds")
    max_turns: int = Field(..., description="Model calls per run")
    config: Dict[StrictStr, Any] = Field({}, description="Effective Hermes profile config, secrets redacted")
    commands: List[StrictStr] = Field([], description="Native slash commands the command task accepts")


class SessionSummary(StrictModel):
    session_id: StrictStr = Field(..., description="Hermes session id")
    title: Union[None, StrictStr] = Field(None, description="Session title")
    source: Union[None, StrictStr] = Field(None, description="Where it started: norfab, cron, ...")
    started: Union[None, StrictStr] = Field(None, description="ISO timestamp of the first message")
    last_active: Union[None, StrictStr] = Field(None, description="ISO timestamp of the last message")
    message_count: int = Field(0, description="Messages in the session")
    preview: Union[None, StrictStr] = Field(None, description="Start of the first user message")


class SessionMessage(StrictModel):
    role: StrictStr = Field(..., description="user, assistant, tool or system")
    content: Union[None, StrictStr] = Field(None, description="Message text")
    tool_calls: List[Dict[StrictStr, Any]] = Field([], description="Tool calls: name and arguments")
    tool_name: Union[None, StrictStr] = Field(None, description="Tool that produced a tool message")
    timestamp: Union[None, StrictStr] = Field(None, description="ISO timestamp")


class SessionDetails(SessionSummary):
    agent: StrictStr = Field(..., description="Agent owning the session")
    worker: StrictStr = Field(..., description="Worker owning the session")
    messages: List[SessionMessage] = Field([], description="The newest messages, oldest first")
    outcome_unknown: List[OutcomeUnknown] = Field(
        [], description="Changes made in the session whose outcome nobody knows, until acknowledged"
    )


class CommandResultData(StrictModel):
    command: StrictStr = Field(..., description="The command as run")
    response: StrictStr = Field(..., description="What the gateway answered")
    agent: StrictStr = Field(..., description="Agent name")
    worker: StrictStr = Field(..., description="Worker name")
    session_id: Union[None, StrictStr] = Field(None, description="Session of the chat after the command")


class InterruptResultData(StrictModel):
    run_id: StrictStr = Field(..., description="Interrupted run")
    agent: StrictStr = Field(..., description="Agent name")
    worker: StrictStr = Field(..., description="Worker name")
    interrupted: StrictBool = Field(..., description="The run was asked to stop")


class ActiveRun(StrictModel):
    run_id: StrictStr = Field(..., description="Run identifier")
    job_uuid: Union[None, StrictStr] = Field(None, description="NorFab job UUID of the invoke")
    agent: StrictStr = Field(..., description="Agent name")
    session_id: Union[None, StrictStr] = Field(None, description="Hermes session id once known")
    started: StrictStr = Field(..., description="ISO timestamp")
    schedule_id: Union[None, StrictStr] = Field(None, description="Schedule that started the run; None for an invoke")
    tokens: int = Field(0, description="Tokens the run used so far, as the provider reported them")
    max_tokens: Union[None, int] = Field(None, description="The run's token budget; None: no cap")


class AgentSchedules(StrictModel):
    schedules: int = Field(0, description="Schedules of the agent")
    next_due: Union[None, StrictStr] = Field(None, description="ISO time the next enabled schedule is due")
    overdue: List[StrictStr] = Field([], description="Enabled schedules past their due time by more than a tick")
    queued: int = Field(0, description="Due occurrences waiting for a free run slot")


class SchedulerStatus(StrictModel):
    ticking: StrictBool = Field(False, description="The worker's scheduler thread is running")
    last_tick: Union[None, StrictStr] = Field(None, description="ISO time of the scheduler's last check")
    agents: Dict[StrictStr, AgentSchedules] = Field({}, description="Schedules by agent")


class AgentBudget(StrictModel):
    day: StrictStr = Field(..., description="The day (UTC) counted, YYYY-MM-DD")
    tokens: int = Field(0, description="Tokens the agent's runs used that day")
    cost_usd: float = Field(0.0, description="What they cost, by the agent's prices")
    daily_tokens: Union[None, int] = Field(None, description="The agent's daily token budget")
    daily_cost_usd: Union[None, float] = Field(None, description="The agent's daily cost budget")
    percent: float = Field(0.0, description="Share of the fuller of the two budgets spent, in %")
    warning: Union[None, StrictStr] = Field(None, description="At 50, 75 and 90 %: how much is spent")


class WorkerStatus(StrictModel):
    ready: StrictBool = Field(..., description="Worker accepts runs")
    errors: List[StrictStr] = Field([], description="Why the worker or some agents are not ready")
    agents: Dict[StrictStr, StrictBool] = Field({}, description="Agent name to availability")
    active_runs: List[ActiveRun] = Field([], description="Runs in flight")
    max_concurrent_runs: int = Field(..., description="Run slots")
    hermes_home: Union[None, StrictStr] = Field(None, description="Instance root")
    commands: List[StrictStr] = Field([], description="Native slash commands the command task accepts")
    pid: int = Field(0, description="Process id of the worker")
    threads: int = Field(0, description="Threads of the worker process")
    open_files: int = Field(0, description="Open file descriptors of the worker process")
    scheduler: SchedulerStatus = Field(SchedulerStatus(), description="Scheduled checks: ticking, next due, overdue")
    budgets: Dict[StrictStr, AgentBudget] = Field({}, description="Daily budgets of the agents that have one")
    changes: ChangesStatus = Field(
        ChangesStatus(), description="Device locks, open breakers and changes of unknown outcome"
    )
    identity: StrictStr = Field("", description="Who may act on this worker: signed operators, or any client")
    records_waiting: int = Field(0, description="Records kept on the worker while the shared record does not answer")
    records_problem: Union[None, StrictStr] = Field(
        None, description="Why the shared record (PostgreSQL) does not answer now, and the fix"
    )
    notify: Dict[StrictStr, ChannelStatus] = Field(
        {}, description="Notification channels: each one's health, outbox and dead letters"
    )


class ReloadOperatorsResultData(StrictModel):
    worker: StrictStr = Field(..., description="Worker name")
    operators: Dict[StrictStr, List[StrictStr]] = Field({}, description="Operator name to key fingerprints, as now")
    identity: StrictStr = Field(..., description="Who may act on this worker now")


class ManageAgentResultData(StrictModel):
    action: StrictStr = Field(..., description="The action done")
    agent: StrictStr = Field(..., description="Agent name")
    worker: StrictStr = Field(..., description="Worker name")
    owner: Union[None, AgentOwner] = Field(None, description="inventory, runtime or native")
    state: Union[AgentState, Literal["deleted"]] = Field(..., description="running, stopped, invalid, or deleted")
    done: List[StrictStr] = Field([], description="What the action did, step by step")


class ScheduleInfo(StrictModel):
    schedule_id: StrictStr = Field(..., description="Schedule id (Hermes cron job id)")
    name: StrictStr = Field(..., description="Schedule name")
    agent: StrictStr = Field(..., description="Agent that runs it")
    worker: StrictStr = Field(..., description="Worker that owns it")
    prompt: StrictStr = Field(..., description="What the agent is asked")
    schedule: StrictStr = Field(..., description="When, as Hermes shows it")
    state: StrictStr = Field(..., description="scheduled, paused or completed")
    next_run: Union[None, StrictStr] = Field(None, description="ISO time of the next run")
    last_run: Union[None, StrictStr] = Field(None, description="ISO time of the last run")
    last_status: Union[None, StrictStr] = Field(None, description="Outcome of the last run")
    runs: int = Field(0, description="Runs so far")
    repeat: Union[None, int] = Field(None, description="Runs allowed; None runs until removed")
    origin: StrictStr = Field(..., description="'norfab' when created with the schedule task, else the chat session")
    skills: List[StrictStr] = Field([], description="Skills loaded before the prompt")
    compare: StrictBool = Field(False, description="Each run is given the previous run's finding")
    criteria: List[Criterion] = Field([], description="Acceptance criteria checked on every run")
    until: Union[None, StrictStr] = Field(None, description="ISO time the observation period ends")


class ScheduleRun(StrictModel):
    schedule_id: StrictStr = Field(..., description="Schedule the run belongs to")
    status: ScheduleRunStatus = Field(
        ...,
        description="ok, regressed, recovered (against its criteria), failed, missed, interrupted, timeout, "
        "skipped (the agent's daily budget was spent, or the worker stopped while it was queued) or queued (due, "
        "waiting for a free run slot; replaced by its run once it ran)",
    )
    due: Union[None, StrictStr] = Field(None, description="ISO time the run was due")
    started: Union[None, StrictStr] = Field(None, description="ISO time the run started")
    duration: Union[None, float] = Field(None, description="Seconds")
    run_id: Union[None, StrictStr] = Field(None, description="Run id, for interrupt while it runs")
    stop_reason: Union[None, StrictStr] = Field(None, description="Why the run ended")
    response: StrictStr = Field("", description="The agent's finding (its start when long)")
    truncated: StrictBool = Field(False, description="The response was cut; read it whole with get_session")
    silent: StrictBool = Field(False, description="The agent answered [SILENT]: recorded, not delivered")
    session_id: Union[None, StrictStr] = Field(None, description="Session of the run, readable with get_session")
    tool_calls: List[ToolCallSummary] = Field([], description="Tool calls with their NorFab job UUIDs")
    warnings: List[StrictStr] = Field([], description="What went wrong or was refused")
    note: Union[None, StrictStr] = Field(None, description="For missed, queued and skipped runs: why and how many")
    criteria: List[CriterionResult] = Field([], description="The acceptance criteria, each met or not")
    artifacts: List[ArtifactSummary] = Field([], description="Every tool result the run received, kept as evidence")
    structured_response: Any = Field(None, description="The answer checked against the schedule's response_schema")
    worker: Union[None, StrictStr] = Field(None, description="Worker that ran it (of a grouped schedule: one member)")


class ScheduleResultData(StrictModel):
    action: StrictStr = Field(..., description="The action done")
    agent: StrictStr = Field(..., description="Agent name")
    worker: StrictStr = Field(..., description="Worker name")
    schedules: List[ScheduleInfo] = Field([], description="The schedules the action shows or changed")
    history: List[ScheduleRun] = Field([], description="Runs, newest first (action history)")
    message: StrictStr = Field("", description="What happened, in one line")


class InvokeResult(Result):
    result: Union[None, InvokeResultData] = Field(None, description="Run result envelope")


class GetAgentsResult(Result):
    result: List[AgentSummary] = Field([], description="Agents on this worker")


class GetAgentResult(Result):
    result: Union[None, AgentDetails] = Field(None, description="Agent details")


class GetStatusResult(Result):
    result: Union[None, WorkerStatus] = Field(None, description="Worker status")


class GetSessionsResult(Result):
    result: List[SessionSummary] = Field([], description="Sessions, newest first")


class GetSessionResult(Result):
    result: Union[None, SessionDetails] = Field(None, description="Session with its messages")


class CommandResult(Result):
    result: Union[None, CommandResultData] = Field(None, description="Command answer")


class GetRunResult(Result):
    result: Union[None, RunStateData] = Field(
        None, description="The run's state, events and, once finished, its envelope"
    )


class ApprovalResult(Result):
    result: Union[None, ApprovalInfo] = Field(None, description="The approval after the decision")


class GetApprovalsResult(Result):
    result: List[ApprovalInfo] = Field([], description="Pending approvals, oldest first")


class ManageAgentResult(Result):
    result: Union[None, ManageAgentResultData] = Field(None, description="What the action did")


class ScheduleResult(Result):
    result: Union[None, ScheduleResultData] = Field(None, description="Schedules or history")


class InterruptResult(Result):
    result: Union[None, InterruptResultData] = Field(None, description="Interrupt acknowledgement")


class ReloadOperatorsResult(Result):
    result: Union[None, ReloadOperatorsResultData] = Field(None, description="The operators the worker takes now")


class GetVersionResult(Result):
    result: Dict[StrictStr, StrictStr] = Field({}, description="Package versions")


class GetInventoryResult(Result):
    result: Dict[StrictStr, Any] = Field({}, description="Worker inventory, secrets redacted")


class ChangeOutcomeResult(Result):
    result: Union[None, OutcomeUnknown] = Field(None, description="The change, as acknowledged")


class BreakerResult(Result):
    result: Union[None, BreakerState] = Field(None, description="The agent's breaker after the reset")
