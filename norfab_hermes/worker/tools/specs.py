"""
An agent's tools as its model sees them.

A :class:`ToolSpec` is one agent's view of one NorFab tool: the schema its
model sees and the NorFab task behind it. Descriptions and schemas not given
in the definition come from the target service's ``list_tasks``, minus
fixed, injected and guarded arguments, closed to extras. A
:class:`DelegateSpec` is one of the agent's delegates: a question for
another agent on one hermes worker (run by ``delegation``). :class:`ToolBox`
holds every agent's specs and retries the ones whose service did not answer.

Nothing here imports Hermes; the plugin registers the specs with Hermes'
tool registry.
"""

import json
import textwrap
import threading
import time
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

from ...models import AgentDefinition, DelegateDefinition, ToolDefinition
from ...safety import commands, guards

LIST_TASKS_TIMEOUT = 15
# arguments NorFab injects into every task; never the model's to set
INJECTED_ARGUMENTS = {"job", "progress"}
DESCRIPTION_CHARS = 1024
QUESTION_CHARS = 4000  # a delegate's question: a request, not a document


class ToolError(Exception):
    """A call that cannot go ahead; the message is for the model."""


@dataclass
class CallTrace:
    """What one tool call has started so far; its summary is built from it once, when the call ends."""

    job_uuid: Optional[str] = None  # the child NorFab job
    delegated: Optional[Any] = None  # a delegate's asked run (``delegation.Child``)


class ToolSpec:
    """One agent's tool: what its model sees and where a call goes."""

    def __init__(self, agent: str, name: str, definition: ToolDefinition) -> None:
        self.agent = agent
        self.name = name
        self.definition = definition
        self.target = definition.norfab
        self.description = definition.description or ""
        self.parameters: Dict[str, Any] = closed(definition.input_schema) if definition.input_schema else {}
        # commands the model may send to a device; read-only forms unless the definition says
        patterns = definition.allow_commands
        self.allowed_commands = commands.compile_commands(patterns or list(commands.READ_ONLY_COMMANDS))
        self.commands_text = f"commands matching {'; '.join(patterns)}" if patterns else commands.READ_ONLY_SUMMARY
        self.error: Optional[str] = None

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

    def resolve(self, tasks: Optional[Dict[str, dict]], error: Optional[str] = None) -> None:
        """Fill description and parameters from the target service's task list."""
        where = f"{self.target.service}.{self.target.task}"
        if tasks is None:
            self.error = f"could not list the tasks of service '{self.target.service}': {error}"
            return
        task = tasks.get(self.target.task)
        if task is None:
            self.error = f"service '{self.target.service}' has no task '{self.target.task}'"
            return
        if (task.get("agent") or {}).get("enabled") is False:
            self.error = f"{where} is not available to agents (its agent.enabled is false)"
            return
        self.error = None
        if not self.description:
            text = (task.get("agent") or {}).get("description") or task.get("description") or where
            self.description = textwrap.dedent(text).strip()[:DESCRIPTION_CHARS]
        if not self.definition.input_schema:
            self.parameters = derive_parameters(task.get("inputSchema") or {}, self.target.kwargs)

    def where(self) -> Tuple[str, str, Any]:
        return self.target.service, self.target.task, self.target.workers

    def summary(self) -> Dict[str, Any]:
        return {**self.definition.model_dump(), "parameters": self.parameters, "error": self.error}


class DelegateSpec:
    """One agent's delegate: its question goes to another agent on one hermes worker."""

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
        return {**self.definition.model_dump(), "kind": "delegate", "parameters": self.parameters, "error": self.error}


def closed(schema: Dict[str, Any]) -> Dict[str, Any]:
    """An explicit schema, closed to extra arguments unless it opens itself explicitly."""
    return schema if "additionalProperties" in schema else {**schema, "additionalProperties": False}


def is_open(schema: Dict[str, Any]) -> bool:
    return schema.get("additionalProperties") not in (None, False)


def derive_parameters(input_schema: Dict[str, Any], fixed: Dict[str, Any]) -> Dict[str, Any]:
    """The task's input schema minus fixed, injected and guarded arguments, closed to extras."""
    schema = _strip_presence(json.loads(json.dumps(input_schema)))
    hidden = INJECTED_ARGUMENTS | set(fixed)
    properties = {
        k: v for k, v in (schema.get("properties") or {}).items() if k not in hidden and not guards.guarded_argument(k)
    }
    schema.update(
        type="object",
        properties=properties,
        required=[r for r in schema.get("required") or [] if r in properties],
        additionalProperties=False,
    )
    if not schema["required"]:
        del schema["required"]
    return schema


def _strip_presence(value: Any) -> Any:
    # "presence" is PICLE's shell flag, not JSON schema
    if isinstance(value, dict):
        return {k: _strip_presence(v) for k, v in value.items() if k != "presence"}
    if isinstance(value, list):
        return [_strip_presence(v) for v in value]
    return value


def refresh(client: Any, specs: List[ToolSpec]) -> None:
    services = {spec.target.service for spec in specs}
    listed = {service: list_tasks(client, service) for service in services}
    for spec in specs:
        spec.resolve(*listed[spec.target.service])


def list_tasks(client: Any, service: str) -> Tuple[Optional[Dict[str, dict]], Optional[str]]:
    try:
        reply = client.run_job(service, "list_tasks", workers="any", timeout=LIST_TASKS_TIMEOUT)
    except Exception as error:  # a broken service must not break the worker
        return None, repr(error)
    if not reply:
        return None, "no worker of that service answered"
    result = next(iter(reply.values()))
    if result.get("failed"):
        return None, "; ".join(result.get("errors") or ["list_tasks failed"])
    return {task["name"]: task for task in result.get("result") or []}, None


class ToolBox:
    """Every agent's tool specs on one worker."""

    def __init__(self, client: Any, retry_interval: float) -> None:
        self.client = client
        self.retry_interval = retry_interval  # seconds between retries of tools whose service did not answer
        self.specs: Dict[str, Dict[str, ToolSpec]] = {}
        self._tried = 0.0  # last retry of unavailable tools
        self._lock = threading.Lock()

    def load(self, agents: Dict[str, AgentDefinition]) -> None:
        """Specs for these agents' tools and delegates; each target service's tasks are listed once."""
        specs = {
            agent: {
                **{name: ToolSpec(agent, name, d) for name, d in a.tools.items()},
                **{name: DelegateSpec(agent, name, d, a.max_delegation_depth) for name, d in a.delegates.items()},
            }
            for agent, a in agents.items()
        }
        refresh(
            self.client, [spec for tools in specs.values() for spec in tools.values() if isinstance(spec, ToolSpec)]
        )
        self.specs.update(specs)

    def get(self, agent: str, name: str) -> Optional[ToolSpec]:
        return self.specs.get(agent, {}).get(name)

    def retry_unavailable(self) -> bool:
        """Retry tools whose NorFab task could not be read (e.g. its service started later).

        At most every ``retry_interval``: listing an absent service's tasks waits
        for a timeout, and runs should not each pay it. Returns whether tools
        that were unavailable are now all resolved.
        """
        with self._lock:
            if time.time() - self._tried < self.retry_interval:
                return False
            self._tried = time.time()
        broken = [
            spec
            for tools in self.specs.values()
            for spec in tools.values()
            if isinstance(spec, ToolSpec) and spec.error
        ]
        if not broken:
            return False
        refresh(self.client, broken)
        return not any(spec.error for spec in broken)

    def errors(self) -> List[str]:
        return [
            f"agent '{agent}' tool '{name}': {spec.error}"
            for agent, tools in self.specs.items()
            for name, spec in tools.items()
            if spec.error
        ]
