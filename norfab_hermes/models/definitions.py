"""
The worker inventory and what it defines: agents, their NorFab tools and
delegates, schedules, and the lineage of a delegated run. Every refusal names
the agent, the field and the fix.
"""

import re
from typing import Any, Dict, List, Literal, Tuple, Union

from pydantic import (
    Field,
    NonNegativeFloat,
    PositiveFloat,
    PositiveInt,
    StrictBool,
    StrictStr,
    TypeAdapter,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from ..errors import InventoryError
from ..safety import commands, guards, host_access, tool_class
from ..safety.tool_class import ToolClass
from .base import StrictModel, describe_validation_error
from .carryover import Criterion, check_json_schema, parse_duration
from .changes import ChangeFields, ChangePolicy, WorkflowDefinition
from .identity import OperatorDefinition
from .notify import NotifySettings

RecordKind = Literal["sessions", "schedules", "evidence"]

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
    kwargs: Dict[StrictStr, Any] = Field({}, description="Fixed task arguments; the model cannot override them")
    job_data: List[StrictStr] = Field([], description="Model argument names moved into the task's job_data")

    @model_validator(mode="after")
    def _allowed_target(self) -> "NorfabToolTarget":
        reason = guards.forbidden_target(self.service, self.task)
        if reason:
            raise ValueError(reason)
        return self


class ToolDefinition(ChangeFields):
    """A NorFab task offered to an agent as a named tool."""

    description: Union[None, StrictStr] = Field(
        None, description="What the tool does; defaults to the task's description"
    )
    input_schema: Union[None, Dict[StrictStr, Any]] = Field(
        None,
        description="JSON schema of the model's arguments; defaults to the task's input schema minus fixed arguments",
    )
    norfab: NorfabToolTarget = Field(..., description="The NorFab task behind the tool")
    approval: Union[None, StrictBool] = Field(
        None,
        description="Ask the operator before every call; default: when the tool can change state (its class). "
        "A change always asks: false on one is refused",
    )
    allow_files: StrictBool = Field(
        False, description="Let the model pass nf:// or git:// file names; off: files can hold credentials"
    )
    allow_multiline: StrictBool = Field(
        False,
        description="Let the model send multi-line values, e.g. configuration text; off: a line break adds a command",
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
            commands.compile_commands(value)
        return value

    def tool_class(self, read_only_tasks: Union[None, Dict[str, List[str]]] = None) -> ToolClass:
        """Read-only, change or forbidden, and why; ``read_only_tasks`` are the worker inventory's additions."""
        target = self.norfab
        found = tool_class.classify(target.service, target.task, target.kwargs, self.allow_commands, read_only_tasks)
        if self.approval and found.kind == tool_class.READ_ONLY:
            return ToolClass(tool_class.CHANGE, f"approval: true in its definition ({found.reason})")
        return found

    @model_validator(mode="after")
    def _classified(self, info: ValidationInfo) -> "ToolDefinition":
        found = self.tool_class(read_only_tasks_of(info))
        if found.kind == tool_class.FORBIDDEN:
            raise ValueError(found.reason)
        if self.approval is False and found.changes:
            raise ValueError(
                f"approval is false, but the tool can change the network ({found.reason}); "
                "a change always asks for approval: remove approval: false"
            )
        if self.approvers is not None and not found.changes:
            raise ValueError(
                f"approvers is set but the tool only reads ({found.reason}): set approval: true, or remove approvers"
            )
        declared = self.change_fields()
        if declared and not found.changes:
            raise ValueError(
                f"{', '.join(declared)}: only for tools that change devices, and this one only reads "
                f"({found.reason}); set approval: true"
            )
        return self

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

    @model_validator(mode="after")
    def _dry_run(self) -> "ToolDefinition":
        if self.preview and self.preview.dry_run and (self.norfab.service, self.norfab.task) != ("nornir", "cfg"):
            raise ValueError("preview dry_run is nornir cfg's dry run; give other tools a read-only preview tool")
        return self


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


class RecordsDefinition(StrictModel):
    """Read-only records of this worker offered to an agent as one tool: sessions, schedule history, evidence."""

    agents: List[StrictStr] = Field(
        ..., min_length=1, description="Agents of this worker whose records the tool reads (the agent itself included)"
    )
    read: List[RecordKind] = Field(
        ["sessions", "schedules", "evidence"],
        min_length=1,
        description="What it reads: sessions (list, search, read), schedules (their history), evidence (artifacts)",
    )
    description: Union[None, StrictStr] = Field(None, description="When the model should use it")

    @field_validator("agents")
    @classmethod
    def _agents(cls, value: List[str]) -> List[str]:
        return [check_agent_name(name) for name in value]


class ModelPrice(StrictModel):
    """What a model costs, in USD per million tokens (as the provider bills them)."""

    input: NonNegativeFloat = Field(..., description="USD per million prompt tokens")
    output: NonNegativeFloat = Field(..., description="USD per million completion tokens")


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
    approvers: List[StrictStr] = Field(
        [],
        description="NorFab client names (operator names once the worker has operators) that may approve or deny "
        "this agent's approval-gated tool calls; empty: any client that reaches the broker (any approver operator)",
    )
    approvals_required: PositiveInt = Field(
        1, description="Different approvers an approval-gated call needs before it runs, e.g. 2 for four eyes"
    )
    max_tokens: Union[None, PositiveInt] = Field(
        None,
        description="Tokens (prompt + completion, as the provider reports them) one run may use; "
        "defaults to the worker's max_tokens",
    )
    daily_tokens: Union[None, PositiveInt] = Field(
        None, description="Tokens all the agent's runs may use per day (UTC), scheduled runs included"
    )
    daily_cost_usd: Union[None, PositiveFloat] = Field(
        None, description="USD all the agent's runs may spend per day (UTC), counted with prices"
    )
    prices: Dict[StrictStr, ModelPrice] = Field(
        {}, description="USD per million tokens by model name, e.g. {gpt-4.1: {input: 2.0, output: 8.0}}"
    )
    dedupe_window: NonNegativeFloat = Field(
        300,
        description="Seconds during which a start_run or invoke with the dedupe_key of an earlier run gets "
        "that run instead of a new one",
    )
    max_runs_per_minute: Union[None, PositiveInt] = Field(
        None, description="Runs the agent may start per minute; more are refused as busy"
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
    memory: StrictBool = Field(
        False, description="Hermes' memory: the agent saves facts (memory tool) and recalls them in later sessions"
    )
    skills: StrictBool = Field(False, description="Hermes' skills: the agent reads and writes skill documents")
    records: Dict[StrictStr, RecordsDefinition] = Field(
        {},
        description="Read-only records of this worker (sessions, schedule history, evidence) of the agents named, "
        "by tool name (listed with the norfab toolset)",
    )
    workflows: Dict[StrictStr, WorkflowDefinition] = Field(
        {}, description="Reviewed NorFab workflow files the agent may run, by tool name; always approval-gated"
    )
    changes: ChangePolicy = Field(ChangePolicy(), description="When and how many changes, and failed verifications")

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

    @model_validator(mode="after")
    def _priced_cost_budget(self) -> "AgentDefinition":
        if self.daily_cost_usd is not None and not self.prices:
            raise ValueError(
                "daily_cost_usd needs prices of the agent's models, e.g. prices: {MODEL: {input: 2.0, output: 8.0}} "
                "(USD per million tokens)"
            )
        return self

    @field_validator("tools", "delegates", "records", "workflows")
    @classmethod
    def _tool_names(cls, value: Dict[str, Any]) -> Dict[str, Any]:
        for name in value:
            if not TOOL_NAME_RE.fullmatch(name):
                raise ValueError(f"tool name '{name}' must be 1-64 letters, digits, '_' or '-'")
        return value

    @field_validator("delegates", "records", "workflows")
    @classmethod
    def _one_name_one_tool(cls, value: Dict[str, Any], info: ValidationInfo) -> Dict[str, Any]:
        for other in ("tools", "delegates", "records"):
            both = sorted(set(value) & set(info.data.get(other) or {})) if other != info.field_name else []
            if both:
                raise ValueError(f"{', '.join(both)} named both under {other} and under {info.field_name}; rename one")
        return value

    @model_validator(mode="after")
    def _change_checks(self, info: ValidationInfo) -> "AgentDefinition":
        """A change's preview and verify name read-only tools of this agent, and use the call's own arguments."""
        extra = read_only_tasks_of(info)
        read_only = sorted(name for name, tool in self.tools.items() if not tool.tool_class(extra).changes)
        changes: List[Tuple[str, Union[ToolDefinition, WorkflowDefinition]]]
        changes = [(f"tools.{n}", t) for n, t in self.tools.items() if n not in read_only]
        changes += [(f"workflows.{n}", t) for n, t in self.workflows.items()]
        for where, tool in changes:
            for part, check in (("preview", tool.preview), ("verify", tool.verify)):
                if check and check.tool and check.tool not in read_only:
                    raise ValueError(
                        f"{where}.{part}: '{check.tool}' is not a read-only tool of this agent "
                        f"(read-only tools: {', '.join(read_only) or 'none'})"
                    )
            if tool.input_schema is not None:
                unknown = sorted(tool.references() - set(tool.input_schema.get("properties") or {}))
                if unknown:
                    raise ValueError(
                        f"{where}: preview, verify or rollback use {', '.join(unknown)}, not arguments in its input_schema"
                    )
        return self


class AgentReference(StrictModel):
    """An agent definition kept in a file served by NorFab (no name wrapper inside)."""

    from_yaml_file: StrictStr = Field(..., description="nf:// or git:// URL of the definition")

    @field_validator("from_yaml_file")
    @classmethod
    def _url(cls, value: str) -> str:
        if not value.startswith(("nf://", "git://")):
            raise ValueError(f"'{value}' must be an nf:// or git:// URL")
        return value


class RecordsSettings(StrictModel):
    """Where the worker keeps its run records, approvals, usage and audit log, and for how long."""

    backend: Literal["sqlite", "postgresql"] = Field(
        "sqlite",
        description="sqlite: the worker's own norfab_records.db; postgresql: one database shared by the fleet",
    )
    dsn_env: Union[None, StrictStr] = Field(
        None,
        description="postgresql: the environment variable holding the connection string (never the inventory)",
        pattern=r"^[A-Za-z_][A-Za-z0-9_]*$",
    )
    keep_days: PositiveInt = Field(90, description="Records older than this many days are deleted")
    keep_runs: PositiveInt = Field(100000, description="At most this many run records; the oldest go first")
    keep_audit: PositiveInt = Field(1000000, description="At most this many audit entries; the oldest go first")

    @model_validator(mode="after")
    def _dsn_for_postgresql(self) -> "RecordsSettings":
        if self.backend == "postgresql" and not self.dsn_env:
            raise ValueError(
                "records.dsn_env: backend postgresql needs the name of the environment variable that holds its "
                "connection string, e.g. dsn_env: NORFAB_HERMES_PG_DSN"
            )
        return self


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
    tool_concurrency_per_worker: PositiveInt = Field(1, description="Tool calls in flight at once to one target worker")
    max_tool_calls: PositiveInt = Field(30, description="NorFab tool calls per run for agents that do not set it")
    max_targets: PositiveInt = Field(
        20, description="Distinct devices a run may touch through nornir tools, for agents that do not set it"
    )
    max_tokens: Union[None, PositiveInt] = Field(
        None, description="Tokens one run may use, for agents that do not set max_tokens; none: no token cap"
    )
    records: RecordsSettings = Field(
        RecordsSettings(), description="Retention of run records, approvals and the audit log"
    )
    max_repeated_calls: PositiveInt = Field(
        3, description="The same tool call with the same arguments this many times in one run stops the run"
    )
    tool_retry_interval: PositiveFloat = Field(
        30.0, description="Seconds between retries of tools whose service did not answer (e.g. it started later)"
    )
    read_only_tasks: Dict[StrictStr, List[StrictStr]] = Field(
        {},
        description="Tasks of services the shipped read-only list does not know that cannot change state, by "
        "service, e.g. {lab_records: [site, customer]}; tools on them need no approval. Only the worker's "
        "inventory can say so, never an agent definition",
    )
    host_tools: Dict[StrictStr, List[StrictStr]] = Field(
        {},
        description="Hermes tools or toolsets that reach the worker host (terminal, file, browser, web, code "
        "execution, ...), granted by agent name; no agent definition can grant them",
    )
    evidence_retention_days: PositiveInt = Field(
        30, description="Days every tool result is kept as evidence (artifacts) before it is deleted"
    )
    operators: Union[StrictStr, Dict[StrictStr, OperatorDefinition]] = Field(
        {},
        description="Operators by name (or an nf:// YAML file of them, read again by reload_operators): their SSH "
        "public keys and roles per agent pattern. Once any is set, every task but get_version needs a request "
        "signed by an operator's key (docs/safety.md#operators-and-keys); none: any NorFab client can act",
    )
    delegation_key: Union[None, StrictStr] = Field(
        None,
        description="Path of this worker's own SSH private key (Ed25519 or ECDSA, unencrypted) that signs what it "
        "asks other hermes workers: its agents' delegated questions (role operator for the asked agents there) and "
        "its check of the run that asks one of its agents (role viewer for the asking agent there). None: unsigned",
    )
    notify: NotifySettings = Field(
        NotifySettings(),
        description="Channels (webhook, email, Matrix) that approvals, regressions, rollbacks and budget warnings "
        "are pushed to, by agent and event kind (docs/notifications.md)",
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

    @field_validator("read_only_tasks")
    @classmethod
    def _read_only_tasks(cls, value: Dict[str, List[str]]) -> Dict[str, List[str]]:
        tool_class.check_read_only_tasks(value)
        return value

    @field_validator("agents", "host_tools")
    @classmethod
    def _agent_names(cls, value: Dict[str, Any]) -> Dict[str, Any]:
        for name in value:
            check_agent_name(name)
        return value


OPERATORS = TypeAdapter(Dict[StrictStr, OperatorDefinition])


def parse_operators(data: Any, where: str) -> Dict[str, OperatorDefinition]:
    """Operators from an nf:// file's YAML; errors name the file and the field."""
    try:
        return OPERATORS.validate_python(data or {})
    except ValidationError as error:
        raise InventoryError(describe_validation_error(error, where)) from None


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


def read_only_tasks_of(info: ValidationInfo) -> Union[None, Dict[str, List[str]]]:
    """The worker inventory's read_only_tasks a definition is checked with (parse_agent's context)."""
    return (info.context or {}).get("read_only_tasks")


def parse_agent(
    name: str, data: Any, read_only_tasks: Union[None, Dict[str, List[str]]] = None
) -> Union[AgentDefinition, AgentReference]:
    """Validate one agent entry, its tools classified with the worker inventory's ``read_only_tasks``;
    errors name the agent and the field."""
    where = f"agent '{name}'"
    if not isinstance(data, dict):
        raise InventoryError(f"{where}: expected a mapping with 'instructions' or 'from_yaml_file'")
    model = AgentReference if "from_yaml_file" in data else AgentDefinition
    try:
        return model.model_validate(data, context={"read_only_tasks": read_only_tasks})
    except ValidationError as error:
        raise InventoryError(describe_validation_error(error, where)) from None


class Lineage(StrictModel):
    """Where a delegated run comes from: the chain of agents that asked, from the first run."""

    parent_run_id: StrictStr = Field(..., description="Run that asked this one")
    root_run_id: StrictStr = Field(..., description="Run that started the chain")
    depth: int = Field(..., ge=1, le=MAX_DELEGATION_DEPTH, description="1 for a run asked by a first run, and so on")
    chain: List[StrictStr] = Field(
        ...,
        min_length=1,
        max_length=MAX_DELEGATION_DEPTH,
        description="AGENT@WORKER of every run above this one, first run first",
    )

    @model_validator(mode="after")
    def _depth_is_chain(self) -> "Lineage":
        if len(self.chain) != self.depth:
            raise ValueError(f"chain lists {len(self.chain)} runs for depth {self.depth}; they must agree")
        return self


class ScheduleDefinition(StrictModel):
    """A scheduled check: what to ask the agent, and when (a native Hermes cron job)."""

    name: Union[None, StrictStr] = Field(None, min_length=1, max_length=80, description="Short name, e.g. r1-watch")
    prompt: Union[None, StrictStr] = Field(None, min_length=1, description="What the agent is asked at every run")
    schedule: Union[None, StrictStr] = Field(
        None, description="'every 5m', a cron expression such as '*/5 * * * *', or an ISO time for one run"
    )
    repeat: Union[None, PositiveInt] = Field(None, description="Stop after this many runs; omit to run until removed")
    skills: Union[None, List[StrictStr]] = Field(None, description="Hermes skills loaded before the prompt")
    compare: Union[None, StrictBool] = Field(
        None, description="Carry the previous run's finding into the next run's prompt, to compare with it"
    )
    criteria: Union[None, List[Criterion]] = Field(
        None,
        description="Acceptance criteria checked on every run: a run that meets them is ok (recovered after a "
        "regression), one that does not is regressed",
    )
    observe_for: Union[None, StrictStr] = Field(
        None, description="End the schedule on its own this long after it is created or updated, e.g. 6h"
    )
    response_schema: Union[None, Dict[StrictStr, Any]] = Field(
        None, description="JSON schema every run's answer is checked against (structured_response in history)"
    )
    group: Union[None, StrictStr] = Field(
        None,
        pattern=r"^[A-Za-z0-9_.-]{1,64}$",
        description="Workers sharing the PostgreSQL record that each hold this schedule (same agent and name): "
        "each due occurrence runs on one of them, the first to claim it",
    )

    @model_validator(mode="after")
    def _aligned(self) -> "ScheduleDefinition":
        if self.group and self.schedule and self.schedule.strip().lower().startswith("every"):
            raise ValueError(
                f"definition.schedule: a grouped schedule needs a cron expression (e.g. '*/5 * * * *'), not "
                f"'{self.schedule}': its occurrences must fall at the same times on every member of group '{self.group}'"
            )
        return self

    @field_validator("observe_for")
    @classmethod
    def _duration(cls, value: Union[None, str]) -> Union[None, str]:
        if value is not None:
            parse_duration(value)
        return value

    @field_validator("response_schema")
    @classmethod
    def _schema(cls, value: Union[None, Dict[str, Any]]) -> Union[None, Dict[str, Any]]:
        return check_json_schema(value)
