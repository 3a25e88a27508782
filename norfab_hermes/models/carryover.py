"""
The models of work that carries over from one run to the next: acceptance
criteria of a watched schedule, the evidence kept of every tool result, an
agent's memory and skills, and the material of a shift handover. Definitions
parts, task inputs and results alike; the rest of the service's models
import these (the records tool's definition is in ``definitions``).
"""

import re
from datetime import timedelta
from typing import Any, Dict, List, Literal, Union

from norfab.models import Result
from pydantic import Field, PositiveInt, StrictBool, StrictStr, field_validator

from .base import CaseId, StrictModel, TaskInput

MemoryTarget = Literal["memory", "user", "skills"]
DURATION_RE = re.compile(r"^\s*(\d+)\s*(s|m|h|d)\s*$", re.I)
DURATION_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}


def parse_duration(text: str) -> timedelta:
    """'90s', '30m', '6h' or '2d' as a timedelta; ValueError names the forms."""
    match = DURATION_RE.match(str(text))
    if not match or not int(match.group(1)):
        raise ValueError(f"'{text}' is not a duration: use a number and s, m, h or d, e.g. 6h")
    return timedelta(**{DURATION_UNITS[match.group(2).lower()]: int(match.group(1))})


def check_regex(pattern: str) -> str:
    try:
        re.compile(pattern)
    except re.error as error:
        raise ValueError(f"'{pattern}' is not a valid regular expression: {error}") from None
    return pattern


def check_json_schema(schema: Union[None, Dict[str, Any]]) -> Union[None, Dict[str, Any]]:
    """A JSON schema the answer can be checked against; ValueError says what is wrong with it."""
    if schema is None:
        return None
    try:
        import jsonschema
    except ImportError:  # a client-only install: the worker checks the schema
        return schema

    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as error:
        raise ValueError(f"not a valid JSON schema: {error.message}") from None
    return schema


# ------------------------------------------------------------- definitions


class Criterion(StrictModel):
    """One acceptance criterion of a watched schedule, checked by the worker on every run."""

    match: StrictStr = Field(..., min_length=1, description="Regular expression searched line by line")
    tool: Union[None, StrictStr] = Field(
        None, description="Search this tool's results (the evidence of the run); omit to search the finding"
    )
    device: Union[None, StrictStr] = Field(None, description="Only the results of this device")
    absent: StrictBool = Field(False, description="The criterion holds when nothing matches")
    name: Union[None, StrictStr] = Field(None, description="What it checks, in words")

    @field_validator("match")
    @classmethod
    def _regex(cls, value: str) -> str:
        return check_regex(value)

    def describe(self) -> str:
        where = f"{self.tool}{f' on {self.device}' if self.device else ''}" if self.tool else "the finding"
        return self.name or f"{where} {'has no line matching' if self.absent else 'has a line matching'} /{self.match}/"


# ------------------------------------------------------------------ inputs


class MemoryInput(TaskInput):
    agent: StrictStr = Field(..., description="Agent name")
    action: Literal["list", "clear"] = Field("list", description="list, or clear entries and skills")
    target: Union[None, MemoryTarget] = Field(
        None, description="clear: memory (the agent's notes), user (what it knows of the operator) or skills"
    )
    entry: Union[None, StrictStr] = Field(
        None, min_length=1, description="clear: a unique part of the one entry to forget, or a skill name; omit for all"
    )


class EvidenceInput(TaskInput):
    agent: StrictStr = Field(..., description="Agent name")
    run_id: Union[None, StrictStr] = Field(None, description="The run whose artifacts to list")
    session_id: Union[None, StrictStr] = Field(None, description="Or the session whose artifacts to list")
    artifact_id: Union[None, StrictStr] = Field(None, description="One artifact, read back whole")


class ReportInput(TaskInput):
    agent: StrictStr = Field(..., description="Agent name")
    session_id: StrictStr = Field(..., description="The session the incident note is written from")


class HandoverInput(TaskInput):
    agents: Union[None, List[StrictStr]] = Field(None, description="Agents whose work is handed over; omit for all")
    since: Union[None, StrictStr] = Field(
        None, description="From when: an ISO time or a duration back from now such as 12h (default 12h)"
    )
    limit: PositiveInt = Field(20, description="Newest sessions per agent")
    case_id: Union[None, CaseId] = Field(
        None, description="Only the sessions with runs of this case (from its first run when since is omitted)"
    )


# ----------------------------------------------------------------- results

ARTIFACT_ID = r"^[0-9a-f]{16}$"


class ArtifactSummary(StrictModel):
    """One tool result kept as evidence: where it came from and its digest."""

    # a file name on the worker and in the shell's report folder: never a path
    artifact_id: StrictStr = Field(..., pattern=ARTIFACT_ID, description="Artifact id, for the evidence task")
    run_id: StrictStr = Field(..., description="Run that received it")
    session_id: Union[None, StrictStr] = Field(None, description="Session of that run")
    agent: StrictStr = Field(..., description="Agent of the run")
    tool: StrictStr = Field(..., description="Tool the model called")
    task: StrictStr = Field(..., description="NorFab service.task that produced it (hermes.invoke for a delegate)")
    job_uuid: Union[None, StrictStr] = Field(None, description="NorFab job that returned it")
    worker: Union[None, StrictStr] = Field(None, description="NorFab worker that returned it")
    device: Union[None, StrictStr] = Field(None, description="Device the output is of")
    command: Union[None, StrictStr] = Field(None, description="Command (or service.task) that printed it")
    collected_at: StrictStr = Field(..., description="ISO time the worker received it")
    sha256: StrictStr = Field(..., description="sha256 of the text kept, hex")
    chars: int = Field(..., description="Length of the text kept")
    redacted: StrictBool = Field(False, description="Secrets were masked before it was kept")
    approved_by: Union[None, StrictStr] = Field(None, description="Who approved the call, for approval-gated tools")
    case_id: Union[None, StrictStr] = Field(None, description="Case (incident) of the run, as its caller named it")


class Artifact(ArtifactSummary):
    text: StrictStr = Field(..., description="The tool result as the worker received it, secrets masked")


class CriterionResult(StrictModel):
    criterion: StrictStr = Field(..., description="The criterion in words")
    met: StrictBool = Field(..., description="It held on this run")
    detail: StrictStr = Field("", description="The line that matched, or why it did not hold")


class SkillInfo(StrictModel):
    name: StrictStr = Field(..., description="Skill name")
    description: StrictStr = Field("", description="What the skill is for")
    category: Union[None, StrictStr] = Field(None, description="Skill category")


class MemoryResultData(StrictModel):
    agent: StrictStr = Field(..., description="Agent name")
    worker: StrictStr = Field(..., description="Worker name")
    memory_on: StrictBool = Field(..., description="The agent's definition turns memory on")
    skills_on: StrictBool = Field(..., description="The agent's definition turns skills on")
    memory: List[StrictStr] = Field([], description="The agent's notes (MEMORY.md), secrets masked")
    user: List[StrictStr] = Field([], description="What it knows of the operator (USER.md), secrets masked")
    skills: List[SkillInfo] = Field([], description="Skills in the agent's profile")
    message: StrictStr = Field("", description="What the action did, in one line")


class EvidenceResultData(StrictModel):
    agent: StrictStr = Field(..., description="Agent name")
    worker: StrictStr = Field(..., description="Worker name")
    artifacts: List[ArtifactSummary] = Field([], description="Artifacts of the run or session, oldest first")
    artifact: Union[None, Artifact] = Field(None, description="The artifact asked for, whole")


class ReportResultData(StrictModel):
    agent: StrictStr = Field(..., description="Agent name")
    worker: StrictStr = Field(..., description="Worker name")
    session_id: StrictStr = Field(..., description="Session the note is written from")
    markdown: StrictStr = Field(..., description="The incident note")
    artifacts: List[ArtifactSummary] = Field([], description="The artifacts its quotes link to")
    quotes: int = Field(0, description="Quoted lines in the agent's answers")
    linked: int = Field(0, description="Quoted lines found in an artifact, linked with its digest")


class HandoverAction(StrictModel):
    tool: StrictStr = Field(..., description="Approval-gated tool called")
    run_id: StrictStr = Field(..., description="Run that called it")
    job_uuid: Union[None, StrictStr] = Field(None, description="Its NorFab job")
    device: Union[None, StrictStr] = Field(None, description="Device it acted on")
    approved_by: Union[None, StrictStr] = Field(None, description="Who approved it")


class HandoverSession(StrictModel):
    worker: StrictStr = Field(..., description="Worker owning the session")
    agent: StrictStr = Field(..., description="Agent of the session")
    session_id: StrictStr = Field(..., description="Session id, to continue it")
    title: Union[None, StrictStr] = Field(None, description="Session title")
    last_active: Union[None, StrictStr] = Field(None, description="ISO time of its last message")
    request: StrictStr = Field("", description="Its first request")
    answer: StrictStr = Field("", description="Its last answer (the start when long), secrets masked")
    runs: List[StrictStr] = Field([], description="Runs of the session with evidence kept")
    jobs: List[StrictStr] = Field([], description="NorFab jobs whose results it used")
    devices: List[StrictStr] = Field([], description="Devices its evidence is of")
    actions: List[HandoverAction] = Field([], description="Changes made, with who approved them")


class HandoverFinding(StrictModel):
    worker: StrictStr = Field(..., description="Worker owning the schedule")
    agent: StrictStr = Field(..., description="Agent that runs it")
    schedule_id: StrictStr = Field(..., description="Schedule id")
    name: StrictStr = Field(..., description="Schedule name")
    status: StrictStr = Field(..., description="Status of its newest run: ok, regressed, recovered, failed, ...")
    started: Union[None, StrictStr] = Field(None, description="ISO time of its newest run")
    run_id: Union[None, StrictStr] = Field(None, description="Its newest run")
    session_id: Union[None, StrictStr] = Field(None, description="Session of that run")
    finding: StrictStr = Field("", description="The finding (the start when long)")
    jobs: List[StrictStr] = Field([], description="NorFab jobs of that run")
    criteria: List[CriterionResult] = Field([], description="Acceptance criteria checked on that run")


class HandoverRun(StrictModel):
    """A run of another worker, from the fleet's shared record."""

    run_id: StrictStr = Field(..., description="Run id")
    agent: StrictStr = Field(..., description="Agent name")
    worker: StrictStr = Field(..., description="Worker that ran it")
    ending: StrictStr = Field(..., description="Its stop reason, or its state while it runs")
    started: StrictStr = Field(..., description="ISO time it started")
    session_id: Union[None, StrictStr] = Field(None, description="Its session, on its worker")
    request: StrictStr = Field("", description="What it was asked (a preview)")
    answer: StrictStr = Field("", description="What it answered (a preview)")


class HandoverMaterial(StrictModel):
    worker: StrictStr = Field(..., description="Worker the material is from")
    since: StrictStr = Field(..., description="ISO time the material starts at")
    sessions: List[HandoverSession] = Field([], description="Sessions active since then, newest first")
    findings: List[HandoverFinding] = Field([], description="Scheduled findings since then, one per schedule")
    case_id: Union[None, StrictStr] = Field(None, description="The case the material is of, when one was asked for")
    record_runs: List[HandoverRun] = Field(
        [], description="Other workers' runs since then in the fleet's shared record (also of workers that are down)"
    )


class HandoverBriefing(StrictModel):
    """A shift handover: the material gathered from every worker and the briefing the writer agent wrote."""

    writer: StrictStr = Field(..., description="AGENT@WORKER that wrote the briefing")
    since: StrictStr = Field(..., description="ISO time the handover starts at")
    material: List[HandoverMaterial] = Field([], description="Each worker's sessions and findings")
    unreachable: List[StrictStr] = Field([], description="Workers whose material could not be gathered, and why")
    briefing: Union[None, Dict[StrictStr, Any]] = Field(
        None, description="The writer's run envelope: response (the briefing), run_id, session_id, tool_calls, ..."
    )


class MemoryResult(Result):
    result: Union[None, MemoryResultData] = Field(None, description="The agent's memory and skills")


class EvidenceResult(Result):
    result: Union[None, EvidenceResultData] = Field(None, description="Artifacts, or one artifact whole")


class ReportResult(Result):
    result: Union[None, ReportResultData] = Field(None, description="The incident note and its artifacts")


class HandoverResult(Result):
    result: Union[None, HandoverMaterial] = Field(None, description="This worker's sessions and findings")
