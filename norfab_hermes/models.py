"""
All Pydantic models of the hermes service: worker inventory, agent and tool
definitions, task inputs and task results.

This module imports neither Hermes nor the worker, so the nfcli shell and
client-side code can use it without pulling ``@Task`` methods into their
process (NorFab's task registry is process-global).
"""

import hashlib
import json
import re
from enum import Enum
from typing import Any, Dict, List, Literal, Union

from norfab.models import Result
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    NonNegativeFloat,
    PositiveFloat,
    PositiveInt,
    StrictBool,
    StrictStr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from . import guards, host_access
from .errors import InventoryError

PROFILE_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
# Hermes keeps these profile names for itself
RESERVED_PROFILE_NAMES = {"default", "profiles", "hermes", "test", "tmp", "root", "sudo"}
# The parts of native Hermes config that norfab-hermes owns: an agent
# definition sets them through its own fields, never through ``hermes``.
OWNED_HERMES_KEYS = {
    "platform_toolsets": "list toolsets under the agent's 'toolsets' field",
    "platforms": "the NorFab platform is configured by the worker",
    "plugins": "plugins are enabled by the worker",
    "gateway": "the gateway is configured by the worker",
}
# Native Hermes slash commands the command task runs, through the gateway.
# Everything else is refused: commands that act on the host process, change
# what inventory owns (model, platforms, approvals) or start agent work
# outside a run's budgets.
SUPPORTED_COMMANDS = {
    "help": "show the native commands",
    "commands": "browse commands and skills",
    "new": "start a new session in this chat (alias: reset)",
    "reset": "start a new session in this chat",
    "sessions": "list this agent's titled sessions",
    "resume": "resume a named session in this chat",
    "title": "set the session title",
    "status": "session, model, token and context info",
    "usage": "token usage of the session",
    "insights": "usage insights and analytics",
    "memory": "review pending memory writes",
    "bundles": "list skill bundles",
    "profile": "show the profile name and home",
    "version": "show the Hermes Agent version",
}
# The gateway drops these even if they reach it some other way.
BLOCKED_COMMANDS = {"restart", "update"}
DEFAULT_RUN_TIMEOUT = 300.0
DEFAULT_TOOL_TIMEOUT = 60.0
MAX_DELEGATION_DEPTH = 5  # no agent may set more: every level multiplies model calls and device load
TOOL_NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, use_enum_values=True)


def describe_validation_error(error: ValidationError, where: str, unknown: str = "key") -> str:
    """One line per problem: where it is, which field, and how to fix it."""
    lines = []
    for item in error.errors():
        field = ".".join(str(part) for part in item["loc"]) or "<root>"
        if item["type"] == "extra_forbidden":
            hint = ""
            if len(item["loc"]) == 1:
                allowed = ", ".join(sorted(_allowed_keys(error.title)))
                hint = f" (allowed: {allowed})" if allowed else f" ({where} takes no {unknown}s)"
            lines.append(f"{where}: unknown {unknown} '{field}'{hint}")
        elif item["type"] == "missing":
            lines.append(f"{where}: field '{field}' is required")
        else:
            lines.append(f"{where}: field '{field}': {item['msg']}")
    return "; ".join(lines)


def _allowed_keys(model_name: str) -> List[str]:
    model = globals().get(model_name)
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        return []
    return [f.alias or name for name, f in model.model_fields.items()]


# ---------------------------------------------------------------------------
# Inventory: tool and agent definitions
# ---------------------------------------------------------------------------


class NorfabToolTarget(StrictModel):
    """Where a NorFab tool runs: the NorFab task and its fixed parts."""

    service: StrictStr = Field(..., description="NorFab service, e.g. nornir")
    task: StrictStr = Field(..., description="Task of that service, e.g. cli")
    workers: Union[StrictStr, List[StrictStr]] = Field(
        "any", description="Job routing selector: any, all, a worker name or a list of names"
    )
    timeout: PositiveFloat = Field(
        DEFAULT_TOOL_TIMEOUT,
        description="Job timeout in seconds, capped by the run's remaining time budget",
    )
    kwargs: Dict[StrictStr, Any] = Field(
        {}, description="Fixed task arguments; the model cannot override them"
    )
    job_data: List[StrictStr] = Field(
        [], description="Model argument names moved into the task's job_data"
    )

    @model_validator(mode="after")
    def _allowed_target(self) -> "NorfabToolTarget":
        reason = guards.forbidden_target(self.service, self.task)
        if reason:
            raise ValueError(reason)
        return self


class ToolDefinition(StrictModel):
    """A NorFab task offered to an agent as a named tool."""

    description: Union[None, StrictStr] = Field(
        None, description="What the tool does; defaults to the task's description"
    )
    input_schema: Union[None, Dict[StrictStr, Any]] = Field(
        None,
        description="JSON schema of the model's arguments; defaults to the task's input schema minus fixed arguments",
    )
    norfab: NorfabToolTarget = Field(..., description="The NorFab task behind the tool")
    approval: StrictBool = Field(
        False, description="Ask the operator before every call (for tools that change state)"
    )
    allow_files: StrictBool = Field(
        False, description="Let the model pass nf:// or git:// file names; off: files can hold credentials"
    )
    allow_multiline: StrictBool = Field(
        False, description="Let the model send multi-line values, e.g. configuration text; off: a line break adds a command"
    )
    allow_commands: Union[None, List[StrictStr]] = Field(
        None,
        description="Regular expressions a command the model sends must match in whole (case-insensitive), for "
        "arguments that reach the device as commands (commands, config, ...); default: read-only "
        "show/display/ping/traceroute forms",
    )

    @field_validator("allow_commands")
    @classmethod
    def _patterns(cls, value: Union[None, List[str]]) -> Union[None, List[str]]:
        if value is not None:
            if not value:
                raise ValueError("allow_commands must list at least one pattern; omit it for the read-only default")
            guards.compile_commands(value)
        return value

    @field_validator("norfab")
    @classmethod
    def _no_secret_kwargs(cls, value: NorfabToolTarget) -> NorfabToolTarget:
        host_access.refuse_secrets(value.kwargs, "norfab.kwargs")
        return value

    @field_validator("input_schema")
    @classmethod
    def _no_guarded_arguments(cls, value: Union[None, Dict[str, Any]]) -> Union[None, Dict[str, Any]]:
        refused = guards.refused_names((value or {}).get("properties") or {})
        if refused:
            raise ValueError(
                f"input_schema offers {', '.join(refused)} to the model; "
                "remove it, or fix its value under norfab.kwargs"
            )
        return value


class DelegateDefinition(StrictModel):
    """Another agent offered to an agent as a tool: its question goes to that agent on that worker."""

    agent: StrictStr = Field(..., description="The agent asked, e.g. routing")
    workers: StrictStr = Field(..., description="The one hermes worker that serves it, e.g. hermes-lab-2")
    description: Union[None, StrictStr] = Field(
        None, description="When the model should ask; defaults to 'Ask agent AGENT on worker WORKER'"
    )
    timeout: Union[None, PositiveFloat] = Field(
        None, description="Longest the asked agent may take, seconds; never more than the caller's remaining budget"
    )

    @field_validator("agent")
    @classmethod
    def _agent(cls, value: str) -> str:
        return check_agent_name(value)

    @field_validator("workers")
    @classmethod
    def _one_worker(cls, value: str) -> str:
        if value in ("any", "all") or any(c in value for c in "*?[,"):
            raise ValueError(
                f"workers '{value}' must name exactly one hermes worker, e.g. hermes-lab-2: "
                "a delegate asks one agent on one worker, whose session and runs stay there"
            )
        return value


class AgentDefinition(StrictModel):
    """A named agent: one native Hermes profile on a hermes worker."""

    instructions: StrictStr = Field(..., min_length=1, description="The agent's instructions (its SOUL.md)")
    description: Union[None, StrictStr] = Field(None, description="One line for agent lists; defaults to the name")
    hermes: Dict[StrictStr, Any] = Field(
        {},
        description="Native Hermes config for the profile, e.g. model and agent settings; "
        "credentials are named with model.api_key_env, never written",
    )
    toolsets: List[StrictStr] = Field([], description="Hermes toolsets enabled for the agent, e.g. norfab")
    tools: Dict[StrictStr, ToolDefinition] = Field({}, description="NorFab tools by tool name")
    run_timeout: PositiveFloat = Field(DEFAULT_RUN_TIMEOUT, description="Wall-clock budget of one run, seconds")
    max_tool_calls: Union[None, PositiveInt] = Field(
        None, description="NorFab tool calls per run; defaults to the worker's max_tool_calls"
    )
    max_targets: Union[None, PositiveInt] = Field(
        None, description="Distinct devices a run may touch through nornir tools; defaults to the worker's max_targets"
    )
    approval_timeout: NonNegativeFloat = Field(
        0,
        description="Seconds a run nobody is attached to waits in the approval inbox for an approval-gated "
        "tool (approve/deny tasks); 0 refuses such calls at once",
    )
    delegates: Dict[StrictStr, DelegateDefinition] = Field(
        {}, description="Other agents this agent may ask, by tool name (listed with the norfab toolset)"
    )
    max_delegation_depth: int = Field(
        2,
        ge=0,
        le=MAX_DELEGATION_DEPTH,
        description="Longest chain of delegations, counted from the run that started it, this agent may extend",
    )

    @field_validator("hermes")
    @classmethod
    def _hermes_config(cls, value: Dict[str, Any]) -> Dict[str, Any]:
        for key, fix in OWNED_HERMES_KEYS.items():
            if key in value:
                raise ValueError(f"'hermes.{key}' is managed by norfab-hermes: {fix}")
        host_access.refuse_host_settings(value)
        if not isinstance(value.get("model", {}), dict):
            raise ValueError("'hermes.model' must be a mapping, e.g. {provider: custom, base_url: ..., default: ...}")
        host_access.refuse_secrets(value, "hermes")
        return value

    @field_validator("tools", "delegates")
    @classmethod
    def _tool_names(cls, value: Dict[str, Any]) -> Dict[str, Any]:
        for name in value:
            if not TOOL_NAME_RE.fullmatch(name):
                raise ValueError(f"tool name '{name}' must be 1-64 letters, digits, '_' or '-'")
        return value

    @field_validator("delegates")
    @classmethod
    def _one_name_one_tool(cls, value: Dict[str, Any], info: ValidationInfo) -> Dict[str, Any]:
        both = sorted(set(value) & set(info.data.get("tools") or {}))
        if both:
            raise ValueError(f"{', '.join(both)} named both under tools and under delegates; rename one")
        return value


class AgentReference(StrictModel):
    """An agent definition kept in a file served by NorFab (no name wrapper inside)."""

    from_yaml_file: StrictStr = Field(..., description="nf:// or git:// URL of the definition")

    @field_validator("from_yaml_file")
    @classmethod
    def _url(cls, value: str) -> str:
        if not value.startswith(("nf://", "git://")):
            raise ValueError(f"'{value}' must be an nf:// or git:// URL")
        return value


class HermesInventory(StrictModel):
    """The hermes worker's inventory (agents are checked one by one, see parse_agent)."""

    service: StrictStr = Field("hermes", description="Always hermes")
    agents: Dict[StrictStr, Dict[StrictStr, Any]] = Field({}, description="Agent definitions or references by name")
    model: Dict[StrictStr, Any] = Field(
        {}, description="Model settings used by every agent that does not set them in hermes.model"
    )
    max_concurrent_runs: PositiveInt = Field(16, description="Agent runs this worker executes at once")
    max_turns: PositiveInt = Field(
        20, description="Model calls per run for agents that do not set hermes.agent.max_turns"
    )
    hermes_home: Union[None, StrictStr] = Field(
        None, description="Instance root for Hermes state; defaults to the worker's __norfab__ directory"
    )
    tool_result_max_chars: PositiveInt = Field(
        20000, description="Tool results longer than this are truncated and marked"
    )
    tool_concurrency_per_worker: PositiveInt = Field(
        1, description="Tool calls in flight at once to one target worker"
    )
    max_tool_calls: PositiveInt = Field(30, description="NorFab tool calls per run for agents that do not set it")
    max_targets: PositiveInt = Field(
        20, description="Distinct devices a run may touch through nornir tools, for agents that do not set it"
    )
    max_repeated_calls: PositiveInt = Field(
        3, description="The same tool call with the same arguments this many times in one run stops the run"
    )
    host_tools: Dict[StrictStr, List[StrictStr]] = Field(
        {},
        description="Hermes tools or toolsets that reach the worker host (terminal, file, browser, web, code "
        "execution, ...), granted by agent name; no agent definition can grant them",
    )
    hermes_log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field(
        "WARNING",
        description="Level of Hermes' own log files (agent.log, gateway.log); INFO records every turn's steps "
        "at some CPU cost per turn",
    )

    @field_validator("service")
    @classmethod
    def _service(cls, value: str) -> str:
        if value != "hermes":
            raise ValueError(f"service must be 'hermes', not '{value}'")
        return value

    @field_validator("model")
    @classmethod
    def _model(cls, value: Dict[str, Any]) -> Dict[str, Any]:
        host_access.refuse_secrets(value, "model")
        return value

    @field_validator("agents", "host_tools")
    @classmethod
    def _agent_names(cls, value: Dict[str, Any]) -> Dict[str, Any]:
        for name in value:
            check_agent_name(name)
        return value


def check_agent_name(name: str) -> str:
    if not PROFILE_NAME_RE.fullmatch(name) or name in RESERVED_PROFILE_NAMES:
        raise ValueError(
            f"agent name '{name}' is not a valid profile name: use 1-64 lowercase letters, "
            f"digits, '_' or '-', starting with a letter or digit, not one of {sorted(RESERVED_PROFILE_NAMES)}"
        )
    return name


def parse_inventory(data: Dict[str, Any]) -> HermesInventory:
    try:
        return HermesInventory.model_validate(data or {})
    except ValidationError as error:
        raise InventoryError(describe_validation_error(error, "hermes inventory")) from None


def parse_agent(name: str, data: Any) -> Union[AgentDefinition, AgentReference]:
    """Validate one agent entry; errors name the agent and the field."""
    where = f"agent '{name}'"
    if not isinstance(data, dict):
        raise InventoryError(f"{where}: expected a mapping with 'instructions' or 'from_yaml_file'")
    model = AgentReference if "from_yaml_file" in data else AgentDefinition
    try:
        return model.model_validate(data)
    except ValidationError as error:
        raise InventoryError(describe_validation_error(error, where)) from None


# ---------------------------------------------------------------------------
# Task results
# ---------------------------------------------------------------------------


class StopReason(str, Enum):
    completed = "completed"
    interrupted = "interrupted"
    run_timeout = "run_timeout"
    max_turns = "max_turns"
    provider_error = "provider_error"
    tool_budget = "tool_budget"
    repeated_call = "repeated_call"
    failed = "failed"


def arguments_digest(arguments: Any) -> str:
    """A short, stable fingerprint of a tool call's arguments (what summaries show instead of them)."""
    return hashlib.sha256(json.dumps(arguments, sort_keys=True, default=str).encode()).hexdigest()[:12]


class Lineage(StrictModel):
    """Where a delegated run comes from: the chain of agents that asked, from the first run."""

    parent_run_id: StrictStr = Field(..., description="Run that asked this one")
    root_run_id: StrictStr = Field(..., description="Run that started the chain")
    depth: int = Field(..., ge=1, le=MAX_DELEGATION_DEPTH, description="1 for a run asked by a first run, and so on")
    chain: List[StrictStr] = Field(
        ..., min_length=1, max_length=MAX_DELEGATION_DEPTH, description="AGENT@WORKER of every run above this one, first run first"
    )

    @model_validator(mode="after")
    def _depth_is_chain(self) -> "Lineage":
        if len(self.chain) != self.depth:
            raise ValueError(f"chain lists {len(self.chain)} runs for depth {self.depth}; they must agree")
        return self


class DelegatedRun(StrictModel):
    """The run a delegate tool call started on the other agent."""

    agent: StrictStr = Field(..., description="Agent asked")
    worker: StrictStr = Field(..., description="Worker that ran it and owns its session")
    run_id: Union[None, StrictStr] = Field(None, description="Its run id, once it started")
    session_id: Union[None, StrictStr] = Field(None, description="Its session, readable with get_session on that worker")
    stop_reason: Union[None, StrictStr] = Field(None, description="Why it ended")


class ToolCallSummary(StrictModel):
    tool: StrictStr = Field(..., description="Tool name as the model saw it")
    service: Union[None, StrictStr] = Field(None, description="NorFab service of a NorFab tool")
    task: Union[None, StrictStr] = Field(None, description="NorFab task of a NorFab tool")
    workers: Union[None, StrictStr, List[StrictStr]] = Field(None, description="Routing selector used")
    arguments_digest: StrictStr = Field(..., description="sha256 prefix of the call's arguments")
    job_uuid: Union[None, StrictStr] = Field(None, description="Child NorFab job UUID")
    status: StrictStr = Field(..., description="completed, failed or refused")
    duration: float = Field(..., description="Seconds")
    truncated: StrictBool = Field(False, description="Result was cut to the size limit")
    error: Union[None, StrictStr] = Field(None, description="Why the call failed or was refused")
    delegated: Union[None, DelegatedRun] = Field(None, description="For a delegate tool: the run it started")


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
    state: StrictStr = Field(..., description="pending, approved, denied or expired")
    requested: StrictStr = Field(..., description="ISO time it was asked")
    expires: StrictStr = Field(..., description="ISO time it is refused unless decided")
    decided: Union[None, StrictStr] = Field(None, description="ISO time of the decision or expiry")
    decided_by: Union[None, StrictStr] = Field(None, description="NorFab client that approved or denied")
    note: Union[None, StrictStr] = Field(None, description="The decider's note")


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
    lineage: Union[None, Lineage] = Field(None, description="For a run another agent asked: who asked, from the first run")


class RunEvent(StrictModel):
    time: StrictStr = Field(..., description="ISO time")
    message: StrictStr = Field(..., description="What happened, as the job event said it")
    severity: StrictStr = Field("INFO", description="INFO or WARNING")


class RunStateData(StrictModel):
    run_id: StrictStr = Field(..., description="Run id")
    agent: StrictStr = Field(..., description="Agent name")
    worker: StrictStr = Field(..., description="Worker name")
    session_id: Union[None, StrictStr] = Field(None, description="Session, once known")
    state: StrictStr = Field(..., description="queued, running, waiting_for_approval or finished")
    stop_reason: Union[None, StrictStr] = Field(None, description="Why it ended, once finished")
    started: StrictStr = Field(..., description="ISO time the run was accepted")
    events: List[RunEvent] = Field([], description="Progress events from the offset asked for")
    next_offset: int = Field(0, description="Offset to ask for next time")
    approvals: List[ApprovalInfo] = Field([], description="Approvals asked so far")
    reply: StrictStr = Field("", description="The message the agent is writing now, as far as it got")
    result: Union[None, InvokeResultData] = Field(None, description="The full envelope, once finished")


class AgentSummary(StrictModel):
    name: StrictStr = Field(..., description="Agent (profile) name")
    description: StrictStr = Field(..., description="Agent description")
    model: Union[None, StrictStr] = Field(None, description="Default model")
    provider: Union[None, StrictStr] = Field(None, description="Model provider")
    available: StrictBool = Field(..., description="Ready to take runs")
    error: Union[None, StrictStr] = Field(None, description="Why the agent is not available")
    worker: Union[None, StrictStr] = Field(None, description="Worker serving the agent")
    owner: Union[None, StrictStr] = Field(
        None, description="inventory, runtime (created with manage_agent) or native (a profile made with Hermes)"
    )
    state: Union[None, StrictStr] = Field(None, description="running, stopped or invalid")
    host_tools: List[StrictStr] = Field(
        [], description="Tools reaching the worker host (shell, files, web, ...) the worker's inventory grants the agent"
    )


class AgentDetails(AgentSummary):
    instructions: StrictStr = Field(..., description="Effective instructions (SOUL.md)")
    toolsets: List[StrictStr] = Field([], description="Enabled toolsets")
    tools: Dict[StrictStr, Any] = Field({}, description="NorFab tool definitions")
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


class AgentSchedules(StrictModel):
    schedules: int = Field(0, description="Schedules of the agent")
    next_due: Union[None, StrictStr] = Field(None, description="ISO time the next enabled schedule is due")
    overdue: List[StrictStr] = Field([], description="Enabled schedules past their due time by more than a tick")


class SchedulerStatus(StrictModel):
    ticking: StrictBool = Field(False, description="The worker's scheduler thread is running")
    last_tick: Union[None, StrictStr] = Field(None, description="ISO time of the scheduler's last check")
    agents: Dict[StrictStr, AgentSchedules] = Field({}, description="Schedules by agent")


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


class AgentAction(str, Enum):
    create = "create"
    clone = "clone"
    start = "start"
    stop = "stop"
    restart = "restart"
    delete = "delete"


class ManageAgentResultData(StrictModel):
    action: StrictStr = Field(..., description="The action done")
    agent: StrictStr = Field(..., description="Agent name")
    worker: StrictStr = Field(..., description="Worker name")
    owner: Union[None, StrictStr] = Field(None, description="inventory, runtime or native")
    state: StrictStr = Field(..., description="running, stopped, invalid, or deleted")
    done: List[StrictStr] = Field([], description="What the action did, step by step")


class ScheduleAction(str, Enum):
    create = "create"
    list = "list"
    update = "update"
    pause = "pause"
    resume = "resume"
    remove = "remove"
    run = "run"
    history = "history"


class ScheduleDefinition(StrictModel):
    """A scheduled check: what to ask the agent, and when (a native Hermes cron job)."""

    name: Union[None, StrictStr] = Field(None, min_length=1, max_length=80, description="Short name, e.g. r1-watch")
    prompt: Union[None, StrictStr] = Field(None, min_length=1, description="What the agent is asked at every run")
    schedule: Union[None, StrictStr] = Field(
        None, description="'every 5m', a cron expression such as '*/5 * * * *', or an ISO time for one run"
    )
    repeat: Union[None, PositiveInt] = Field(None, description="Stop after this many runs; omit to run until removed")
    skills: Union[None, List[StrictStr]] = Field(None, description="Hermes skills loaded before the prompt")


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


class ScheduleRun(StrictModel):
    schedule_id: StrictStr = Field(..., description="Schedule the run belongs to")
    status: StrictStr = Field(..., description="ok, failed, missed, interrupted or timeout")
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
    note: Union[None, StrictStr] = Field(None, description="For missed runs: why and how many")


class ScheduleResultData(StrictModel):
    action: StrictStr = Field(..., description="The action done")
    agent: StrictStr = Field(..., description="Agent name")
    worker: StrictStr = Field(..., description="Worker name")
    schedules: List[ScheduleInfo] = Field([], description="The schedules the action shows or changed")
    history: List[ScheduleRun] = Field([], description="Runs, newest first (action history)")
    message: StrictStr = Field("", description="What happened, in one line")


# ---------------------------------------------------------------------------
# Task inputs (validated by NorFab's @Task; NorFab adds its own job argument)
# ---------------------------------------------------------------------------


class TaskInput(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, use_enum_values=True)


class InvokeInput(TaskInput):
    agent: StrictStr = Field(..., description="Agent name")
    instructions: StrictStr = Field(..., min_length=1, description="What to ask the agent")
    session_id: Union[None, StrictStr] = Field(
        None, description="Continue this session; omit to start a new one"
    )
    timeout: Union[None, PositiveFloat] = Field(
        None, description="Run budget in seconds, at most the agent's run_timeout"
    )
    interactive: StrictBool = Field(
        False,
        description="The caller answers input requests (questions and approvals) while the run goes on; "
        "otherwise they are refused at once, or wait in the approval inbox when the agent sets approval_timeout",
    )
    lineage: Union[None, Lineage] = Field(
        None, description="Set by a delegating agent's worker: the runs that asked for this one"
    )


class AgentInput(TaskInput):
    agent: StrictStr = Field(..., description="Agent name")


class GetSessionsInput(AgentInput):
    limit: PositiveInt = Field(20, description="Newest sessions to list")


class GetSessionInput(AgentInput):
    session_id: StrictStr = Field(..., description="Hermes session id")
    limit: PositiveInt = Field(50, description="Newest messages to return")


class CommandInput(AgentInput):
    command: StrictStr = Field(..., min_length=2, description="Native slash command, e.g. /usage")
    session_id: Union[None, StrictStr] = Field(None, description="Session whose chat runs the command")


class InterruptInput(AgentInput):
    run_id: StrictStr = Field(..., description="Run to stop, from the invoke's first event or get_status")


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


class ScheduleInput(AgentInput):
    action: ScheduleAction = Field(..., description="create, list, update, pause, resume, remove, run or history")
    schedule_id: Union[None, StrictStr] = Field(None, description="Schedule id or name (all actions but create and list)")
    definition: Union[None, ScheduleDefinition] = Field(
        None, description="create: name, prompt and schedule (repeat, skills optional); update: the fields to change"
    )
    limit: PositiveInt = Field(20, description="history: newest runs to return")


class StartRunInput(AgentInput):
    instructions: StrictStr = Field(..., min_length=1, description="What to ask the agent")
    session_id: Union[None, StrictStr] = Field(None, description="Continue this session; omit to start a new one")
    run_timeout: Union[None, PositiveFloat] = Field(
        None, description="Run budget in seconds, at most the agent's run_timeout (not the caller's job timeout)"
    )


class GetRunInput(AgentInput):
    run_id: StrictStr = Field(..., description="Run id, from invoke")
    offset: int = Field(0, ge=0, description="First event to return; use next_offset of the previous answer")


class DecisionInput(TaskInput):
    approval_id: StrictStr = Field(..., description="Approval id, from get_approvals or get_run")
    note: Union[None, StrictStr] = Field(None, description="Why, for the run's record")


class GetApprovalsInput(TaskInput):
    agent: Union[None, StrictStr] = Field(None, description="Only this agent's approvals")


class GetRunResult(Result):
    result: Union[None, RunStateData] = Field(None, description="The run's state, events and, once finished, its envelope")


class ApprovalResult(Result):
    result: Union[None, ApprovalInfo] = Field(None, description="The approval after the decision")


class GetApprovalsResult(Result):
    result: List[ApprovalInfo] = Field([], description="Pending approvals, oldest first")


class ManageAgentInput(AgentInput):
    action: AgentAction = Field(..., description="create, clone, start, stop, restart or delete")
    definition: Union[None, Dict[StrictStr, Any]] = Field(
        None, description="create: the agent definition; clone: fields to change in the copy (e.g. hermes.model)"
    )
    source: Union[None, StrictStr] = Field(None, description="create: an nf:// file holding the definition")
    clone_from: Union[None, StrictStr] = Field(None, description="clone: the agent to copy")
    interrupt: StrictBool = Field(
        False, description="stop, restart, delete: interrupt the agent's runs in flight instead of refusing"
    )


class ManageAgentResult(Result):
    result: Union[None, ManageAgentResultData] = Field(None, description="What the action did")


class GetStatusInput(TaskInput):
    agent: Union[None, StrictStr] = Field(None, description="Only this agent's runs and schedules")


class ScheduleResult(Result):
    result: Union[None, ScheduleResultData] = Field(None, description="Schedules or history")


class InterruptResult(Result):
    result: Union[None, InterruptResultData] = Field(None, description="Interrupt acknowledgement")


class GetVersionResult(Result):
    result: Dict[StrictStr, StrictStr] = Field({}, description="Package versions")


class GetInventoryResult(Result):
    result: Dict[StrictStr, Any] = Field({}, description="Worker inventory, secrets redacted")

