"""
Every agent's tool specs on one worker: built from the agents' definitions, resolved from their
services' task lists (once per service), workflow files read; unavailable ones retried.
"""

import threading
import time
from typing import Any, Dict, List, Optional, Tuple

from ...models import AgentDefinition
from .specs import AnySpec, DelegateSpec, RecordsSpec, ToolSpec, WorkflowSpec

LIST_TASKS_TIMEOUT = 15


def refresh(client: Any, specs: List[Any]) -> None:
    """Resolve NorFab tools from their services' task lists (once per service); read workflow files."""
    tools = [spec for spec in specs if isinstance(spec, ToolSpec)]
    listed = {service: list_tasks(client, service) for service in {spec.target.service for spec in tools}}
    for spec in tools:
        spec.resolve(*listed[spec.target.service])
    for spec in specs:
        if isinstance(spec, WorkflowSpec):
            spec.load(client)


def list_tasks(client: Any, service: str) -> Tuple[Optional[Dict[str, Dict[str, Any]]], Optional[str]]:
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

    def __init__(
        self, client: Any, retry_interval: float, read_only_tasks: Optional[Dict[str, List[str]]] = None
    ) -> None:
        self.client = client
        self.retry_interval = retry_interval  # seconds between retries of tools whose service did not answer
        self.read_only_tasks = read_only_tasks or {}  # the worker inventory's additions to the read-only list
        self.specs: Dict[str, Dict[str, AnySpec]] = {}
        self._tried = 0.0  # last retry of unavailable tools
        self._lock = threading.Lock()

    def load(self, agents: Dict[str, AgentDefinition]) -> None:
        """Specs for these agents' tools and delegates; each target service's tasks are listed once."""
        specs: Dict[str, Dict[str, AnySpec]] = {
            agent: {
                **{name: ToolSpec(agent, name, d, self.read_only_tasks) for name, d in a.tools.items()},
                **{name: DelegateSpec(agent, name, d, a.max_delegation_depth) for name, d in a.delegates.items()},
                **{name: RecordsSpec(agent, name, d) for name, d in a.records.items()},
                **{name: WorkflowSpec(agent, name, d) for name, d in a.workflows.items()},
            }
            for agent, a in agents.items()
        }
        refresh(self.client, [spec for tools in specs.values() for spec in tools.values()])
        self.specs.update(specs)

    def drop_refused(self, agent: str) -> Optional[str]:
        """Why the services of an agent's tools refuse its definition (its specs dropped), or None."""
        refusals = [f"tool '{n}': {spec.refusal}" for n, spec in self.specs.get(agent, {}).items() if spec.refusal]
        if not refusals:
            return None
        self.specs.pop(agent, None)
        return "; ".join(refusals)

    def get(self, agent: str, name: str) -> Optional[AnySpec]:
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
            if isinstance(spec, (ToolSpec, WorkflowSpec)) and spec.error
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
