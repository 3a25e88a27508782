"""
The inputs of the hermes service's NorFab tasks (validated by NorFab's
``@Task``; NorFab adds its own job argument). Unknown arguments are refused.
"""

from enum import Enum
from typing import Any, Dict, Union

from pydantic import (
    Field,
    PositiveFloat,
    PositiveInt,
    StrictBool,
    StrictStr,
    field_validator,
    model_validator,
)

from .base import CaseId, TaskInput
from .carryover import check_json_schema
from .definitions import Lineage, ScheduleDefinition

RESPONSE_SCHEMA = "JSON schema the answer must match: the result carries it parsed as structured_response"


def _response_schema(cls: type, value: Union[None, Dict[str, Any]]) -> Union[None, Dict[str, Any]]:
    return check_json_schema(value)


class AgentAction(str, Enum):
    create = "create"
    clone = "clone"
    start = "start"
    stop = "stop"
    restart = "restart"
    delete = "delete"


class ScheduleAction(str, Enum):
    create = "create"
    list = "list"
    update = "update"
    pause = "pause"
    resume = "resume"
    remove = "remove"
    run = "run"
    history = "history"


class AgentInput(TaskInput):
    agent: StrictStr = Field(..., description="Agent name")


class RunInput(AgentInput):
    """What invoke and start_run both take: a request for a run of the agent."""

    instructions: StrictStr = Field(..., min_length=1, description="What to ask the agent")
    session_id: Union[None, StrictStr] = Field(None, description="Continue this session; omit to start a new one")
    run_timeout: Union[None, PositiveFloat] = Field(
        None, description="Run budget in seconds, at most the agent's run_timeout (not the caller's job timeout)"
    )
    response_schema: Union[None, Dict[StrictStr, Any]] = Field(None, description=RESPONSE_SCHEMA)
    dedupe_key: Union[None, StrictStr] = Field(
        None,
        min_length=1,
        max_length=200,
        description="Within the agent's dedupe_window a request with the key of an earlier run gets that run",
    )
    case_id: Union[None, CaseId] = Field(
        None, description="Case (incident) the run belongs to: every record of the run carries it, e.g. INC-2041"
    )

    _schema: Any = field_validator("response_schema")(classmethod(_response_schema))


class InvokeInput(RunInput):
    timeout: Union[None, PositiveFloat] = Field(
        None, description="Deprecated name of run_timeout (still accepted); give one of the two"
    )
    interactive: StrictBool = Field(
        False,
        description="The caller answers input requests (questions and approvals) while the run goes on; "
        "otherwise they are refused at once, or wait in the approval inbox when the agent sets approval_timeout",
    )
    lineage: Union[None, Lineage] = Field(
        None, description="Set by a delegating agent's worker: the runs that asked for this one"
    )

    @model_validator(mode="after")
    def _one_run_budget(self) -> "InvokeInput":
        if self.timeout is not None and self.run_timeout is not None and self.timeout != self.run_timeout:
            raise ValueError("timeout is the old name of run_timeout: give run_timeout alone")
        return self


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


class ScheduleInput(AgentInput):
    action: ScheduleAction = Field(..., description="create, list, update, pause, resume, remove, run or history")
    schedule_id: Union[None, StrictStr] = Field(
        None, description="Schedule id or name (all actions but create and list)"
    )
    definition: Union[None, ScheduleDefinition] = Field(
        None, description="create: name, prompt and schedule (repeat, skills optional); update: the fields to change"
    )
    limit: PositiveInt = Field(20, description="history: newest runs to return")


class StartRunInput(RunInput):
    """start_run's request: invoke's, without a caller attached to answer questions."""


class GetRunInput(AgentInput):
    run_id: StrictStr = Field(..., description="Run id, from invoke")
    offset: int = Field(0, ge=0, description="First event to return; use next_offset of the previous answer")


class DecisionInput(TaskInput):
    approval_id: StrictStr = Field(..., description="Approval id, from get_approvals or get_run")
    note: Union[None, StrictStr] = Field(None, description="Why, for the run's record")


class GetApprovalsInput(TaskInput):
    agent: Union[None, StrictStr] = Field(None, description="Only this agent's approvals")


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


class GetStatusInput(TaskInput):
    agent: Union[None, StrictStr] = Field(None, description="Only this agent's runs and schedules")


class ResetBreakerInput(AgentInput):
    note: Union[None, StrictStr] = Field(None, description="What was found and fixed, for the record")


class AcknowledgeInput(TaskInput):
    outcome_id: StrictStr = Field(..., description="Outcome id of the change, from get_status or get_run")
    note: Union[None, StrictStr] = Field(None, description="What the devices showed when checked, for the record")
