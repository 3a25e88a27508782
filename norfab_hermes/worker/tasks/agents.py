"""Tasks about the agents of a worker: list and show them, and change them while the worker runs."""

from typing import Any, Dict, Optional

from norfab.core.worker import Job
from norfab.models import Result

from ...errors import InvalidRequest
from ...models import (
    AgentInput,
    GetAgentResult,
    GetAgentsResult,
    ManageAgentInput,
    ManageAgentResult,
    TaskInput,
)
from ...norfab_compat import client_of
from ..agents.views import agent_details, agent_summaries
from .base import READ_ONLY, REST, HermesTask
from .mixin import TaskMixin


class AgentTasks(TaskMixin):
    @HermesTask(input=TaskInput, output=GetAgentsResult, fastapi=REST, mcp=READ_ONLY)
    def get_agents(self) -> Result:
        """List the agents served by this worker with their model and availability."""
        host = self.host
        if host is None:
            return Result(result=[])
        return Result(
            result=[
                summary.model_dump()
                for summary in agent_summaries(host.catalog, host.tools.specs, host.worker_name, host.availability())
            ]
        )

    @HermesTask(input=ManageAgentInput, output=ManageAgentResult, fastapi=REST, mcp=False, agent={"enabled": False})
    def manage_agent(
        self,
        job: Job,
        action: str,
        agent: str,
        definition: Optional[Dict[str, Any]] = None,
        source: Optional[str] = None,
        clone_from: Optional[str] = None,
        interrupt: bool = False,
    ) -> Result:
        """
        Create, clone, start, stop, restart or delete an agent while the worker runs.

        Args:
            action: create, clone, start, stop, restart or delete.
            agent: agent name (the new one for create and clone).
            definition: create: the agent definition; clone: fields to change in the copy.
            source: create: an nf:// file holding the definition, instead of ``definition``.
            clone_from: clone: the agent to copy.
            interrupt: stop, restart, delete: interrupt the agent's runs in flight instead of refusing.

        Returns:
            Result whose ``result`` says what was done and the agent's owner and state.
        """
        if source is not None:
            if definition is not None:
                raise InvalidRequest("definition: give a definition or a source, not both")
            definition = self.fetch_definition(agent, source).model_dump(exclude_defaults=True)
        result = self.running_host().manage_agent(action, agent, definition, clone_from, interrupt, client_of(job))
        return Result(result=result.model_dump())

    @HermesTask(
        input=AgentInput,
        output=GetAgentResult,
        fastapi=REST,
        mcp=READ_ONLY,
    )
    def get_agent(self, agent: str) -> Result:
        """
        Show one agent: effective instructions, tools and Hermes config, secrets redacted.

        Args:
            agent: agent name.
        """
        host = self.running_host()
        return Result(
            result=agent_details(
                host.catalog,
                host.tools.specs.get(agent, {}),
                host.worker_name,
                host.availability(),
                host.require(agent),
                agent,
            ).model_dump()
        )
