"""
An agent's tools as its model sees them.

A :class:`ToolSpec` is one agent's view of one NorFab tool: the schema its
model sees and the NorFab task behind it. Descriptions and schemas not given
in the definition come from the target service's ``list_tasks`` (``schemas``).
A :class:`DelegateSpec` is one of the agent's delegates: a question for
another agent on one hermes worker (run by ``delegation``); a
:class:`RecordsSpec` reads this worker's own records (``records``).
A :class:`WorkflowSpec` is one of the agent's workflow tools: a reviewed
workflow file, read and checked when the specs load (run by ``workflow``).
``toolbox`` holds every agent's specs.

Nothing here imports Hermes; the plugin registers the specs with Hermes'
tool registry.
"""

import hashlib
import textwrap
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple, Union

import yaml

from ...models import DelegateDefinition, RecordsDefinition, ToolDefinition, WorkflowDefinition
from ...safety import commands
from ...safety.tool_class import CHANGE, READ_ONLY, ToolClass
from ...safety.workflows import Step, check_workflow
from .schemas import allowed_commands, closed, derive_parameters, task_arguments_problem

DESCRIPTION_CHARS = 1024
QUESTION_CHARS = 4000  # a delegate's question: a request, not a document


class ToolSpec:
    """One agent's tool: what its model sees and where a call goes."""

    def __init__(
        self, agent: str, name: str, definition: ToolDefinition, read_only_tasks: Optional[Dict[str, List[str]]] = None
    ) -> None:
        self.agent = agent
        self.name = name
        self.definition = definition
        self.target = definition.norfab
        self.tool_class = definition.tool_class(read_only_tasks)
        self.description = definition.description or ""
        self.parameters: Dict[str, Any] = closed(definition.input_schema) if definition.input_schema else {}
        self.allowed_commands, self.commands_text = allowed_commands(definition.allow_commands)
        self.task_schema: Dict[str, Any] = {}  # the task's own input schema, as its service lists it
        self.error: Optional[str] = None
        self.refusal: Optional[str] = None  # what the task's service says is wrong with the definition

    @property
    def changes(self) -> bool:
        """Calls can change the network: they run inside the change envelope."""
        return self.tool_class.changes

    @property
    def schema(self) -> Dict[str, Any]:
        """The OpenAI function schema (name added by Hermes' registry)."""
        description = self.description
        names = commands.command_arguments((self.parameters or {}).get("properties") or {})
        if names:
            description = f"{description}\n\n{', '.join(names)}: only {self.commands_text}"
        if self.error:
            description = f"UNAVAILABLE: {self.error}. {description}"
        return {"description": description, "parameters": self.parameters or {"type": "object", "properties": {}}}

    def resolve(self, tasks: Optional[Dict[str, Dict[str, Any]]], error: Optional[str] = None) -> None:
        """Fill description and parameters from the target service's task list."""
        where = f"{self.target.service}.{self.target.task}"
        if tasks is None:
            self.error = f"could not list the tasks of service '{self.target.service}': {error}"
            return
        task = tasks.get(self.target.task)
        if task is None:
            self.refused(f"service '{self.target.service}' has no task '{self.target.task}'")
            return
        if (task.get("agent") or {}).get("enabled") is False:
            self.refused(f"{where} is not available to agents (its agent.enabled is false)")
            return
        self.task_schema = task.get("inputSchema") or {}
        problem = task_arguments_problem(self.task_schema, self.target.kwargs, complete=False)
        if problem:
            self.refused(f"norfab.kwargs do not fit {where}: {problem}")
            return
        self.error = self.refusal = None
        if not self.description:
            text = (task.get("agent") or {}).get("description") or task.get("description") or where
            self.description = textwrap.dedent(text).strip()[:DESCRIPTION_CHARS]
        if not self.definition.input_schema:
            self.parameters = derive_parameters(task.get("inputSchema") or {}, self.target.kwargs)

    def refused(self, reason: str) -> None:
        self.error = self.refusal = reason

    @property
    def kind(self) -> str:
        """Which executor runs its calls (``kinds``): a change goes through the change envelope."""
        return "change" if self.changes else "norfab"

    def where(self) -> Tuple[str, str, Any]:
        return self.target.service, self.target.task, self.target.workers

    def summary(self) -> Dict[str, Any]:
        return {
            **self.definition.model_dump(),
            **self.tool_class.shown(),
            "parameters": self.parameters,
            "error": self.error,
        }


class DelegateSpec:
    """One agent's delegate: its question goes to another agent on one hermes worker."""

    kind = "delegate"

    refusal = None  # nothing a service could refuse: the asked worker checks the question

    parameters = {
        "type": "object",
        "properties": {
            "question": {
                "type": "string",
                "minLength": 1,
                "maxLength": QUESTION_CHARS,
                "description": "What to ask, with the facts the other agent needs (devices, symptoms, what you found)",
            }
        },
        "required": ["question"],
        "additionalProperties": False,
    }

    def __init__(self, agent: str, name: str, definition: DelegateDefinition, max_depth: int) -> None:
        self.agent = agent
        self.name = name
        self.definition = definition
        self.max_depth = max_depth  # the delegating agent's max_delegation_depth
        self.description = (
            definition.description or f"Ask agent '{definition.agent}' on worker '{definition.workers}'"
        )[:DESCRIPTION_CHARS]
        self.error: Optional[str] = None
        self.tool_class = ToolClass(
            READ_ONLY,
            f"it asks agent '{definition.agent}' on worker '{definition.workers}', whose changes take that agent's "
            "approval with a named approver",
        )

    @property
    def schema(self) -> Dict[str, Any]:
        description = (
            f"{self.description}. It investigates with its own tools and answers in its own words; "
            "quote what it found when you rely on it."
        )
        if self.error:
            description = f"UNAVAILABLE: {self.error}. {description}"
        return {"description": description, "parameters": self.parameters}

    def where(self) -> Tuple[str, str, Any]:
        return "hermes", "invoke", self.definition.workers

    def summary(self) -> Dict[str, Any]:
        return {
            **self.definition.model_dump(),
            **self.tool_class.shown(),
            "kind": "delegate",
            "parameters": self.parameters,
            "error": self.error,
        }


# what each kind of record lets the model do (``records.RecordsReader``)
RECORD_ACTIONS = {
    "sessions": ["list_sessions", "search_sessions", "read_session"],
    "schedules": ["list_schedules", "schedule_history"],
    "evidence": ["list_evidence", "read_artifact"],
}
SEARCH_CHARS = 200


class RecordsSpec:
    """One agent's records tool: read-only records of this worker, of the agents its definition names."""

    kind = "records"
    refusal = None

    def __init__(self, agent: str, name: str, definition: RecordsDefinition) -> None:
        self.agent = agent
        self.name = name
        self.definition = definition
        self.actions = [action for kind in definition.read for action in RECORD_ACTIONS[kind]]
        self.description = (
            definition.description
            or f"Read the records of agents {', '.join(definition.agents)} on this worker: {', '.join(definition.read)}"
        )[:DESCRIPTION_CHARS]
        self.error: Optional[str] = None
        self.tool_class = ToolClass(READ_ONLY, "it reads this worker's records")

    @property
    def parameters(self) -> Dict[str, Any]:
        text = {"type": "string", "minLength": 1, "maxLength": 100}
        return {
            "type": "object",
            "properties": {
                "action": {"type": "string", "enum": self.actions, "description": "What to read"},
                "agent": {"type": "string", "enum": self.definition.agents, "description": "Whose records"},
                "session_id": {**text, "description": "read_session, list_evidence: the session"},
                "text": {**text, "maxLength": SEARCH_CHARS, "description": "search_sessions: words to find"},
                "schedule": {**text, "description": "schedule_history: the schedule id or name"},
                "run_id": {**text, "description": "list_evidence: the run"},
                "artifact_id": {**text, "description": "read_artifact: the artifact, read whole"},
                "limit": {"type": "integer", "minimum": 1, "maximum": 50, "description": "Newest items (default 10)"},
            },
            "required": ["action", "agent"],
            "additionalProperties": False,
        }

    @property
    def schema(self) -> Dict[str, Any]:
        description = f"{self.description}. Read-only; each record names its session, run and NorFab job to refer to."
        return {"description": description, "parameters": self.parameters}

    def where(self) -> Tuple[None, None, None]:
        return None, None, None  # no NorFab task: the worker reads its own records

    def summary(self) -> Dict[str, Any]:
        return {
            **self.definition.model_dump(),
            **self.tool_class.shown(),
            "kind": "records",
            "parameters": self.parameters,
            "error": self.error,
        }


@dataclass(frozen=True)
class JobTarget:
    """Where a job goes that is no NorFab tool's own target: a workflow (the workflow service is never
    a plain tool's target), or the dry run of one of its steps."""

    service: str
    task: str
    workers: Union[str, List[str]]
    timeout: float


class WorkflowSpec:
    """One agent's workflow tool: a reviewed workflow file, its variables, and the steps it was read with."""

    changes = True  # always approval-gated, always inside the change envelope
    kind = "change"
    refusal = None  # a file that fails its checks makes the tool unavailable until it is fixed (error)
    tool_class = ToolClass(CHANGE, "a workflow runs the steps of a reviewed file; it is always a change")

    def __init__(self, agent: str, name: str, definition: WorkflowDefinition) -> None:
        self.agent = agent
        self.name = name
        self.definition = definition
        self.target = JobTarget("workflow", "run", definition.workers, definition.timeout)
        self.parameters = closed(definition.input_schema)
        self.allowed_commands, self.commands_text = allowed_commands(definition.allow_commands)
        self.description = (definition.description or f"Run the reviewed workflow {definition.file}")[
            :DESCRIPTION_CHARS
        ]
        self.steps: List[Step] = []  # as last read
        self.error: Optional[str] = None

    @property
    def schema(self) -> Dict[str, Any]:
        steps = ", ".join(f"{s.name} ({s.service}.{s.task})" for s in self.steps)
        description = (
            f"{self.description}\n\nRuns the reviewed workflow {self.definition.file} (steps: {steps or 'unread'}). "
            "It changes devices: the operator approves every call."
        )
        if self.error:
            description = f"UNAVAILABLE: {self.error}. {description}"
        return {"description": description, "parameters": self.parameters}

    def where(self) -> Tuple[str, str, Any]:
        return self.target.service, self.target.task, self.target.workers

    def read(self, client: Any) -> Tuple[Dict[str, Any], str, List[Step]]:
        """The file as NorFab serves it now, its sha256 and its checked steps; ValueError says what is wrong."""
        url = self.definition.file
        try:
            fetched = client.fetch_file(url, read=True)
        except Exception as error:  # a broken file service must not break the worker
            raise ValueError(f"could not fetch {url}: {error!r}") from None
        if not fetched or str(fetched.get("status")) != "200" or fetched.get("content") is None:
            raise ValueError(f"could not fetch {url}: {(fetched or {}).get('error') or 'no file service answered'}")
        text = fetched["content"]
        sha = hashlib.sha256(text.encode()).hexdigest()
        if self.definition.sha256 and sha != self.definition.sha256:
            raise ValueError(
                f"{url} is not the reviewed file: its sha256 is {sha}, the definition pins {self.definition.sha256}"
            )
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as error:
            raise ValueError(f"{url} is not valid YAML: {error}") from None
        variables = set(self.parameters.get("properties") or {})
        try:
            steps = check_workflow(data, variables, self.allowed_commands, self.commands_text)
        except ValueError as error:
            raise ValueError(f"{url}: {error}") from None
        return data, sha, steps

    def load(self, client: Any) -> None:
        try:
            _, _, self.steps = self.read(client)
            self.error = None
        except ValueError as error:
            self.error = str(error)

    def summary(self) -> Dict[str, Any]:
        steps = [{"step": s.name, "service": s.service, "task": s.task, "workers": s.workers} for s in self.steps]
        return {
            **self.definition.model_dump(),
            **self.tool_class.shown(),
            "kind": "workflow",
            "parameters": self.parameters,
            "steps": steps,
            "error": self.error,
        }


# every tool kind an agent's tool box holds
AnySpec = Union[ToolSpec, DelegateSpec, RecordsSpec, WorkflowSpec]
