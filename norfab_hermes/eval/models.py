"""
The eval's data: a job (one scenario file), how the lab runs, what one run
collected, and how it scored.

A job file holds what the operator asks (the only part a model sees) and the
ground truth, kept apart from any model: the verdict rubric, the evidence
that proves it, and the actions that are safe, need approval or must never
happen. Pure models: no NorFab, no Hermes.
"""

import re
from pathlib import Path
from typing import Any, Dict, List, Literal, Optional

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _regexes(value: List[str]) -> List[str]:
    for pattern in value:
        try:
            re.compile(pattern)
        except re.error as error:
            raise ValueError(f"'{pattern}' is not a valid regular expression: {error}") from None
    return value


class Verdict(Strict):
    """How the answer's verdict line is judged: never by equality with one expected text."""

    says: str = Field(..., description="The right verdict in words, for the people reading the results")
    require: List[str] = Field(..., min_length=1, description="Regexes that must all match the verdict line")
    reject: List[str] = Field([], description="Regexes none of which may match it (a wrong device, a wrong yes)")

    _check = field_validator("require", "reject")(_regexes)


class Evidence(Strict):
    """One line that proves the verdict: the answer must quote it, and a tool of the run must have returned it."""

    device: Optional[str] = Field(None, description="Device the line comes from; None for records")
    command: Optional[str] = Field(None, description="Command (or records task) that printed it")
    line: Optional[str] = Field(None, description="Text the quoted line contains")
    match: Optional[str] = Field(None, description="Or a regex the quoted line matches, for values that change")

    @field_validator("match")
    @classmethod
    def _match(cls, value: Optional[str]) -> Optional[str]:
        return _regexes([value])[0] if value else value

    @model_validator(mode="after")
    def _text_or_regex(self) -> "Evidence":
        if not (self.line or self.match):
            raise ValueError("evidence needs 'line' (text the quote contains) or 'match' (a regex)")
        return self

    def describe(self) -> str:
        where = " ".join(x for x in (self.device, self.command) if x)
        return f"{where}: {self.line or self.match}" if where else (self.line or self.match or "")


class Action(Strict):
    """A tool call, optionally narrowed by argument values (regexes, matched in full)."""

    tool: str
    args: Dict[str, str] = {}

    def matches(self, tool: str, arguments: Dict[str, Any]) -> bool:
        return tool == self.tool and all(
            re.fullmatch(pattern, str(arguments.get(name, ""))) for name, pattern in self.args.items()
        )


class Actions(Strict):
    safe: List[str] = Field([], description="Read-only tools: any call is fine")
    approval: List[Action] = Field([], description="Changes allowed only with the operator's yes")
    never: List[Action] = Field([], description="Calls that must never happen, approved or not")


class Truth(Strict):
    """The ground truth: never sent to a model."""

    verdict: Verdict
    evidence: List[Evidence] = Field([], description="Lines the answer must quote")
    needed_tools: List[str] = Field([], description="Tools a good investigation calls")
    actions: Actions = Actions()


class Operator(Strict):
    """What the eval's operator answers when a run asks for approval."""

    approve: List[Action] = Field([], description="Calls the operator approves; every other request is denied")


class Expect(Strict):
    """What a run must score to pass; the defaults are a perfect run."""

    verdict: Literal["correct", "wrong", "none"] = "correct"
    max_fabricated: int = Field(0, ge=0)
    evidence: float = Field(1.0, ge=0, le=1, description="Share of the required evidence quoted")
    needed_tools: float = Field(1.0, ge=0, le=1, description="Share of the needed tools called")
    max_unsafe: int = Field(0, ge=0)


class Job(Strict):
    """One operator job (a file under the jobs folder)."""

    id: str = Field("", description="The file's stem, e.g. 01-customer-reachability")
    title: str
    request: str = Field(..., min_length=1, description="What the operator asks, word for word")
    agent: str
    worker: str = "hermes-worker-1"
    tools: List[str] = Field([], description="The agent's tools (and delegates) the job uses")
    needs: Optional[str] = Field(None, description="A capability the product lacks today; the job is not run")
    operator: Operator = Operator()
    truth: Truth
    expect: Expect = Expect()

    @classmethod
    def from_file(cls, path: Any) -> "Job":
        """Load a job file; a bad one is an error naming the file, the field and the fix."""
        with open(path, encoding="utf-8") as f:
            data = yaml.safe_load(f) or {}
        try:
            return cls(**{"id": _stem(path), **data})
        except ValidationError as error:
            first = error.errors()[0]
            field = ".".join(str(p) for p in first["loc"]) or "file"
            raise ValueError(f"{path}: {field}: {first['msg']}") from None


def _stem(path: Any) -> str:
    name = str(path).replace("\\", "/").rsplit("/", 1)[-1]
    return name.rsplit(".", 1)[0]


class DeviceFiles(Strict):
    """The files listing the lab's device ports, which the copy moves to free ones."""

    fakenos: str = Field(..., description="FakeNOS network inventory, e.g. fakenos/lab.yaml")
    nornir: str = Field(..., description="nornir worker file with the same hosts, e.g. nornir/common.yaml")


class LabSettings(Strict):
    """How the eval starts the lab (``eval/lab.yaml`` in the lab folder)."""

    topology: List[Any] = Field(
        ..., min_length=1, description="Workers started next to the broker, NorFab topology style"
    )
    devices: Optional[DeviceFiles] = Field(None, description="Where the lab lists its device ports")
    reset: Optional[Dict[str, Any]] = Field(
        None, description="A NorFab job sent before every run: service, task, kwargs"
    )

    def workers(self) -> List[str]:
        return [item if isinstance(item, str) else next(iter(item)) for item in self.topology]


class ToolResult(Strict):
    """What one tool call returned, as the model read it."""

    tool: str
    content: str
    agent: str
    via: Optional[str] = Field(None, description="The delegate call of the run that led to it")


class RunData(Strict):
    """Everything one run left behind, collected through the hermes tasks."""

    job: str
    repeat: int
    model: str
    agent: str
    worker: str
    response: str = ""
    stop_reason: str = ""
    run_id: Optional[str] = None
    session_id: Optional[str] = None
    tool_calls: List[Dict[str, Any]] = Field([], description="invoke's tool_calls, then those of delegated runs")
    results: List[ToolResult] = []
    approvals: List[Dict[str, Any]] = Field([], description="Approval requests: tool, arguments, approved")
    usage: Dict[str, int] = Field({}, description="api_calls, input_tokens, output_tokens, delegated runs included")
    seconds: float = 0.0
    error: Optional[str] = None


def load_jobs(folder: Any, only: Optional[List[str]] = None) -> List[Job]:
    """The job files in ``folder`` (sorted by name), or those whose id starts with one of ``only``."""
    paths = sorted(Path(folder).glob("*.yaml"))
    if not paths:
        raise ValueError(f"no job files (*.yaml) in {folder}")
    jobs = [Job.from_file(path) for path in paths]
    if only:
        jobs = [job for job in jobs if any(job.id.startswith(prefix) for prefix in only)]
        if not jobs:
            raise ValueError(f"no job in {folder} starts with {', '.join(only)}")
    return jobs
