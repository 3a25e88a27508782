"""
The change contract: how a definition declares a change (preview, verify,
rollback, windows, an agent's change policy, workflow tools) and the records
results carry about changes (what was previewed, changed, verified and
rolled back; device locks, breakers and outcomes nobody knows).
"""

import re
from typing import Any, Dict, List, Literal, Set, Union

from pydantic import (
    Field,
    NonNegativeFloat,
    PositiveFloat,
    PositiveInt,
    StrictBool,
    StrictStr,
    field_validator,
    model_validator,
)

from ..safety import commands, guards, windows
from ..safety.changes import placeholders
from .base import StrictModel

DEFAULT_WORKFLOW_TIMEOUT = 300.0
SHA256_RE = re.compile(r"^[0-9a-f]{64}$")


def check_windows(value: List[str]) -> List[str]:
    for text in value:
        windows.parse_window(text)
    return value


class Expectation(StrictModel):
    """What a check must show on every device the change named; ``${name}`` is the call's argument."""

    contains: List[StrictStr] = Field([], description="Text the output must hold")
    absent: List[StrictStr] = Field([], description="Text the output must not hold")
    matches: List[StrictStr] = Field([], description="Regular expressions some line of the output must match")

    @model_validator(mode="after")
    def _something(self) -> "Expectation":
        if not (self.contains or self.absent or self.matches):
            raise ValueError("expect needs contains, absent or matches: what the check must show")
        for pattern in self.matches:
            try:
                re.compile(pattern)
            except re.error as error:
                raise ValueError(f"matches {pattern!r} is not a valid regular expression: {error}") from None
        return self


class PreviewDefinition(StrictModel):
    """What the operator sees before approving: the task's dry run, or a read-only tool of the agent."""

    dry_run: StrictBool = Field(
        False, description="Run the change's nornir cfg task with dry_run: the config per device"
    )
    tool: Union[None, StrictStr] = Field(None, description="A read-only tool of the same agent, e.g. the config now")
    arguments: List[StrictStr] = Field([], description="The change call's arguments passed on to that tool, by name")

    @model_validator(mode="after")
    def _one(self) -> "PreviewDefinition":
        if self.dry_run == bool(self.tool):
            raise ValueError("preview is either dry_run: true or tool: NAME (a read-only tool of this agent)")
        return self


class VerifyDefinition(StrictModel):
    """A read-only check after the change (and after a rollback), and what it must show."""

    tool: StrictStr = Field(..., description="A read-only tool of the same agent")
    arguments: List[StrictStr] = Field([], description="The change call's arguments passed on to that tool, by name")
    expect: Expectation = Field(..., description="What the check must show once the change is made")


class RollbackDefinition(StrictModel):
    """How a change whose verification failed is undone."""

    commands: Union[None, List[StrictStr]] = Field(
        None, description="Commands sent to the change's own task and devices; ${name} is the call's argument"
    )
    workflow: Union[None, StrictStr] = Field(
        None, description="Or an nf:// workflow file, run with the call's arguments as its variables"
    )
    approval: StrictBool = Field(True, description="Ask the operator before rolling back")

    @model_validator(mode="after")
    def _one(self) -> "RollbackDefinition":
        if (self.commands is None) == (self.workflow is None):
            raise ValueError("rollback is either commands: [...] or workflow: nf://...")
        if self.commands is not None and not self.commands:
            raise ValueError("rollback commands must list at least one command")
        if self.workflow is not None and not self.workflow.startswith("nf://"):
            raise ValueError(f"rollback workflow '{self.workflow}' must be an nf:// file")
        return self


class ChangeFields(StrictModel):
    """What a change tool (approval: true, or a workflow) may declare about its changes and who approves them."""

    preview: Union[None, PreviewDefinition] = Field(None, description="Shown in the approval, per device")
    verify: Union[None, VerifyDefinition] = Field(None, description="Checked after the change")
    rollback: Union[None, RollbackDefinition] = Field(None, description="Undoes a change whose verification failed")
    windows: List[StrictStr] = Field(
        [], description="When this tool may change devices, in the agent's time zone; adds to the agent's windows"
    )
    approvers: Union[None, List[StrictStr]] = Field(
        None,
        description="NorFab client names that may approve or deny this tool's calls; default: the agent's approvers",
    )
    approvals_required: Union[None, PositiveInt] = Field(
        None, description="Different approvers this tool's calls need (four eyes: 2); default: the agent's"
    )

    _windows = field_validator("windows")(check_windows)

    def change_fields(self) -> List[str]:
        return [name for name in ("preview", "verify", "rollback", "windows") if getattr(self, name)]

    def references(self) -> Set[str]:
        """The call's arguments the change declarations pass on or put in (${name})."""
        used = set()
        for check in (self.preview, self.verify):
            used |= set(check.arguments) if check else set()
        if self.verify:
            used |= placeholders(self.verify.expect.model_dump())
        if self.rollback and self.rollback.commands:
            used |= placeholders(self.rollback.commands)
        return used


class ChangePolicy(StrictModel):
    """An agent's changes: when, how many, and what happens when one does not verify."""

    windows: List[StrictStr] = Field(
        [], description="When the agent may change devices, e.g. 'sat,sun 00:00-24:00'; none: any time"
    )
    timezone: StrictStr = Field("UTC", description="Time zone of the windows (IANA name)")
    max_per_run: PositiveInt = Field(5, description="Changes one run may make")
    max_per_hour: PositiveInt = Field(20, description="Changes the agent may make in any hour")
    breaker_after: PositiveInt = Field(
        3, description="Failed verifications in a row that stop the agent's changes until an operator resets them"
    )
    rollback: StrictBool = Field(True, description="Roll back a change whose verification failed (as declared)")
    lock_wait: NonNegativeFloat = Field(
        60, description="Seconds a change waits for another change of the same device to end"
    )

    _windows = field_validator("windows")(check_windows)

    @field_validator("timezone")
    @classmethod
    def _zone(cls, value: str) -> str:
        windows.time_zone(value)
        return value


class WorkflowDefinition(ChangeFields):
    """A reviewed NorFab workflow file an agent may run as one tool; always approval-gated."""

    description: Union[None, StrictStr] = Field(None, description="What the workflow does, for the model")
    file: StrictStr = Field(..., description="nf:// URL of the workflow file")
    sha256: Union[None, StrictStr] = Field(
        None, description="SHA-256 of the reviewed file; a file that differs is refused"
    )
    input_schema: Dict[StrictStr, Any] = Field(
        {"type": "object", "properties": {}},
        description="JSON schema of the variables the model gives (${name} in the file); closed",
    )
    workers: Union[StrictStr, List[StrictStr]] = Field("any", description="Workflow workers that may run it")
    timeout: PositiveFloat = Field(
        DEFAULT_WORKFLOW_TIMEOUT, description="Seconds the workflow may take, capped by the run's budget"
    )
    allow_commands: Union[None, List[StrictStr]] = Field(
        None, description="Regular expressions every command of every step must match; default: read-only forms"
    )

    @field_validator("file")
    @classmethod
    def _url(cls, value: str) -> str:
        if not value.startswith("nf://"):
            raise ValueError(f"'{value}' must be an nf:// file served by NorFab")
        return value

    @field_validator("sha256")
    @classmethod
    def _sha(cls, value: Union[None, str]) -> Union[None, str]:
        if value is not None and not SHA256_RE.fullmatch(value):
            raise ValueError("sha256 must be 64 lowercase hex digits (sha256sum of the reviewed file)")
        return value

    @field_validator("allow_commands")
    @classmethod
    def _patterns(cls, value: Union[None, List[str]]) -> Union[None, List[str]]:
        if value is not None:
            commands.compile_commands(value)
        return value

    @field_validator("input_schema")
    @classmethod
    def _variables(cls, value: Dict[str, Any]) -> Dict[str, Any]:
        if value.get("type") != "object" or not isinstance(value.get("properties", {}), dict):
            raise ValueError("input_schema must be an object schema whose properties are the variables")
        refused = guards.refused_names(value.get("properties") or {})
        if refused:
            raise ValueError(f"input_schema offers {', '.join(refused)} to the model; remove it")
        return value


# ------------------------------------------------------------------ records

ChangeOutcome = Literal[
    "verified", "unverified", "failed", "verify_failed", "rolled_back", "rollback_failed", "outcome_unknown", "refused"
]


class CheckResult(StrictModel):
    """One read-only check of a change: after it, or after its rollback."""

    passed: StrictBool = Field(..., description="The devices showed what the check expects")
    job_uuid: Union[None, StrictStr] = Field(None, description="NorFab job of the check")
    problems: List[StrictStr] = Field([], description="What each device failed to show")


class RollbackRecord(StrictModel):
    state: Literal["done", "failed", "declined", "not_allowed"] = Field(
        ..., description="done, failed, declined by the operator, or not_allowed by the agent's policy"
    )
    job_uuid: Union[None, StrictStr] = Field(None, description="NorFab job of the rollback")
    error: Union[None, StrictStr] = Field(None, description="Why it did not happen or failed")
    check: Union[None, CheckResult] = Field(
        None, description="After the rollback: the devices show what they showed before the change"
    )


class ChangeRecord(StrictModel):
    """What one change call previewed, changed, verified and rolled back."""

    devices: List[StrictStr] = Field([], description="Devices the change named")
    digest: StrictStr = Field(..., description="Digest of tool, task arguments, targets and preview, as approved")
    preview: Dict[StrictStr, StrictStr] = Field({}, description="What the operator saw, per device")
    outcome: ChangeOutcome = Field(..., description="verified, unverified, failed, verify_failed, rolled_back, ...")
    verify: Union[None, CheckResult] = Field(None, description="The check after the change")
    rollback: Union[None, RollbackRecord] = Field(None, description="The rollback after a failed check")


class OutcomeUnknown(StrictModel):
    """A change whose job was in flight when its worker stopped (or stopped waiting): nobody knows what it did."""

    outcome_id: StrictStr = Field(..., description="Id to acknowledge it with (the change's job UUID)")
    job_uuid: StrictStr = Field(..., description="NorFab job of the change, readable on the target worker")
    run_id: StrictStr = Field(..., description="Run that made the change")
    agent: StrictStr = Field(..., description="Agent of the run")
    worker: StrictStr = Field(..., description="Hermes worker of the run")
    session_id: Union[None, StrictStr] = Field(None, description="Session of the run")
    tool: StrictStr = Field(..., description="Change tool")
    target: StrictStr = Field(..., description="NorFab service.task and workers the change went to")
    devices: List[StrictStr] = Field([], description="Devices the change named")
    started: StrictStr = Field(..., description="ISO time the change job was sent")
    reason: StrictStr = Field(..., description="Why its outcome is unknown")
    acknowledged: Union[None, StrictStr] = Field(None, description="ISO time an operator acknowledged it")
    acknowledged_by: Union[None, StrictStr] = Field(None, description="NorFab client that acknowledged it")
    note: Union[None, StrictStr] = Field(None, description="What the operator found")


class DeviceLock(StrictModel):
    device: StrictStr = Field(..., description="Device being changed")
    run_id: StrictStr = Field(..., description="Run changing it")
    agent: StrictStr = Field(..., description="Agent of that run")
    tool: StrictStr = Field(..., description="Change tool")
    since: StrictStr = Field(..., description="ISO time the lock was taken")


class BreakerState(StrictModel):
    agent: StrictStr = Field(..., description="Agent")
    failures: int = Field(0, description="Failed verifications in a row")
    threshold: int = Field(..., description="Failures that open the breaker (changes.breaker_after)")
    open: StrictBool = Field(False, description="Changes of the agent are stopped until an operator resets it")
    opened: Union[None, StrictStr] = Field(None, description="ISO time it opened")
    reset_by: Union[None, StrictStr] = Field(None, description="NorFab client that last reset it")
    note: Union[None, StrictStr] = Field(None, description="The operator's note at the last reset")


class ChangesStatus(StrictModel):
    locks: List[DeviceLock] = Field([], description="Devices being changed now")
    breakers: List[BreakerState] = Field([], description="Agents with failed verifications or an open breaker")
    outcome_unknown: List[OutcomeUnknown] = Field(
        [], description="Changes nobody knows the outcome of, until acknowledged"
    )
