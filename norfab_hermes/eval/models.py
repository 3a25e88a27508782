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
    status: Optional[str] = Field(None, description="A watch job: the status of its last scheduled run")
    references: bool = Field(False, description="The answer cites the session and run of every earlier request")


class Before(Strict):
    """Work done before the job's request: an earlier session the job builds on."""

    job: Optional[str] = Field(None, description="Another job's id: its request, agent, worker and playbook")
    request: Optional[str] = Field(None, description="Or a request of its own, run on this job's playbook")
    agent: Optional[str] = Field(None, description="Its agent; default: the job's")
    worker: Optional[str] = Field(None, description="Its worker; default: the job's")

    @model_validator(mode="after")
    def _job_or_request(self) -> "Before":
        if bool(self.job) == bool(self.request):
            raise ValueError("an earlier request names either 'job' (another job) or 'request', not both")
        return self


class Watch(Strict):
    """The request runs as a watched schedule of the job's agent, started by the eval, not as one invoke."""

    schedule: str = Field("every 1h", description="When it would run on its own; the eval runs it now")
    runs: int = Field(2, ge=1, le=10, description="Runs the eval starts; the last one is scored")
    compare: bool = Field(True, description="Each run is given the previous run's finding")
    observe_for: Optional[str] = Field(None, description="Its observation period, e.g. 6h")
    criteria: List[Dict[str, Any]] = Field([], description="Acceptance criteria, as the schedule task takes them")


class Handover(Strict):
    """The request is a shift handover across every hermes worker, written by the job's agent."""

    since: str = Field("2h", description="From when: a duration back from now, or an ISO time")
    agents: Optional[List[str]] = Field(None, description="Agents whose work is handed over; omit for all")


class Job(Strict):
    """One operator job (a file under the jobs folder)."""

    id: str = Field("", description="The file's stem, e.g. 01-customer-reachability")
    title: str
    request: str = Field(..., min_length=1, description="What the operator asks, word for word")
    agent: str
    worker: str = "hermes-worker-1"
    tools: List[str] = Field([], description="The agent's tools (and delegates) the job uses")
    needs: Optional[str] = Field(None, description="A capability the product lacks today; the job is not run")
    before: List[Before] = Field([], description="Earlier requests, run first (each on a lab reset), not scored")
    watch: Optional[Watch] = Field(None, description="Run the request as a watched schedule")
    handover: Optional[Handover] = Field(None, description="Run the request as a shift handover")
    report: bool = Field(False, description="Also write the incident note: every quote must link to its artifact")
    operator: Operator = Operator()
    truth: Truth
    expect: Expect = Expect()

    @classmethod
    def from_file(cls, path: Any) -> "Job":
        """Load a job file; a bad one is an error naming the file, the field and the fix."""
        with open(path, encoding="utf-8") as f:
            try:
                data = yaml.safe_load(f) or {}
            except yaml.YAMLError as error:
                raise ValueError(f"{path}: not valid YAML: {' '.join(str(error).split())}") from None
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
    status: Optional[str] = Field(None, description="A watch job: its last scheduled run's status")
    references: List[str] = Field([], description="Sessions and runs of the earlier requests")
    report: Optional[Dict[str, Any]] = Field(None, description="The incident note: quotes, linked, verified digests")
    followed: Optional[str] = Field(None, description="Why the answer was read with get_run: NorFab lost the job")


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


# The fault benchmark (norfab_hermes.eval.bench): the generated network, the scenarios, the verdict.


class Port(Strict):
    """One interface of a generated device."""

    name: str
    description: str
    address: Optional[str] = Field(None, description="IPv4 address/prefix length; None for a layer-2 port")
    peer: Optional[str] = Field(None, description="The device at the other end")
    peer_port: Optional[str] = None
    ospf: bool = Field(False, description="OSPF runs on it")
    area: str = "0"
    vlans: List[int] = Field([], description="A trunk's allowed VLANs")
    physical: bool = True
    spare: bool = Field(False, description="Unused and shut by design")


class Node(Strict):
    """One generated device: its role, ports, and what it peers with."""

    name: str
    role: Literal["core", "distribution", "site"]
    loopback: str
    ports: List[Port]
    bgp: List[Dict[str, Any]] = Field([], description="BGP peers: address, remote_as, port, description")
    statics: List[Dict[str, str]] = Field([], description="Static routes: prefix, next_hop")
    acls: Dict[str, List[str]] = Field({}, description="Access lists by name, entries in order")

    def port(self, name: str) -> Port:
        return next(p for p in self.ports if p.name == name)


class Network(Strict):
    """A generated lab network of one size, with the records the operations team keeps."""

    size: str
    nodes: List[Node]
    records: Dict[str, Any] = Field({}, description="sites and customers, served by the records worker")

    def node(self, name: str) -> Node:
        return next(n for n in self.nodes if n.name == name)


class Fault(Strict):
    """What one scenario injected (the ground truth), or nothing for a healthy one."""

    kind: str = Field(..., description="A kind of the catalogue, or 'healthy'")
    device: Optional[str] = None
    interface: Optional[str] = Field(None, description="None for a fault that is not on one interface")
    affected: List[str] = Field([], description="Devices the fault shows on, the faulty one included")
    detail: Dict[str, Any] = Field({}, description="Kind-specific values the device models render")


class BenchScenario(Strict):
    """One scenario: its seed (replay it with --replay KIND:SEED), the fault, and the lab's background noise."""

    index: int
    seed: int
    fault: Fault
    noise: Dict[str, Any] = Field({}, description="Benign findings every scenario has: config logs, old counters")

    @property
    def healthy(self) -> bool:
        return self.fault.kind == "healthy"


class BenchVerdict(BaseModel):
    """The structured answer an agent gives (invoke's response_schema); keys a model adds are ignored."""

    fault_found: bool
    device: Optional[str] = None
    interface: Optional[str] = None
    kind: Optional[str] = None
    affected_devices: List[str] = []
    evidence: List[Dict[str, Any]] = Field([], description="Lines quoted from tool results: device, command, line")


class BenchRun(Strict):
    """What one scenario's run left, scored."""

    index: int
    seed: int
    size: str
    model: str
    repeat: int = 1
    truth: Fault
    verdict: Optional[Dict[str, Any]] = Field(None, description="The structured answer, None when there is none")
    structured_error: Optional[str] = None
    stop_reason: str = ""
    error: Optional[str] = None
    tool_calls: int = 0
    unsafe_calls: List[str] = []
    evidence: int = 0
    fabricated: List[str] = []
    device_correct: bool = False
    interface_correct: bool = False
    kind_correct: bool = False
    affected_jaccard: float = 0.0
    model_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: Optional[float] = None
    seconds: float = 0.0
