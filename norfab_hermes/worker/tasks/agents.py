"""Tasks about the agents of a worker: list and show them, and change them while the worker runs."""

from typing import Any, Dict, List, Optional

from norfab.models import Result

from ...errors import InvalidRequest
from ...models import (
    SUPPORTED_COMMANDS,
    AgentDetails,
    AgentInput,
    AgentSummary,
    GetAgentResult,
    GetAgentsResult,
    ManageAgentInput,
    ManageAgentResult,
    TaskInput,
)
from ...safety.redact import redact
from ..host import HermesHost
from .base import READ_ONLY, REST, HermesTask


class AgentTasks:
    @HermesTask(input=TaskInput, output=GetAgentsResult, fastapi=REST, mcp=READ_ONLY)
    def get_agents(self) -> Result:
        """List the agents served by this worker with their model and availability."""
        host = self.host
        if host is None:
            return Result(result=[])
        return Result(result=[summary.model_dump() for summary in agent_summaries(host)])

    @HermesTask(input=ManageAgentInput, output=ManageAgentResult, fastapi=REST, mcp=False, agent={"enabled": False})
    def manage_agent(
        self,
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
        result = self.running_host().manage_agent(action, agent, definition, clone_from, interrupt)
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
        return Result(result=agent_details(self.running_host(), agent).model_dump())


def agent_summary(host: HermesHost, name: str, available: bool, config: Dict[str, Any]) -> AgentSummary:
    catalog = host.catalog
    definition = catalog.agents.get(name)
    model = config.get("model") or {}
    return AgentSummary(
        name=name,
        description=(definition.description if definition else None) or name,
        model=model.get("default"),
        provider=model.get("provider"),
        available=available,
        error=catalog.errors.get(name),
        worker=host.worker_name,
        owner=catalog.owners.get(name),
        state=catalog.state(name),
        host_tools=catalog.host_tools(name),
    )


def agent_summaries(host: HermesHost) -> List[AgentSummary]:
    catalog = host.catalog
    return [
        agent_summary(host, name, available, catalog.effective_config(name) if name in catalog.agents else {})
        for name, available in host.availability().items()
    ]


def agent_details(host: HermesHost, agent: str) -> AgentDetails:
    definition = host.require(agent)
    config = host.catalog.effective_config(agent)
    summary = agent_summary(host, agent, host.availability()[agent], config)
    return AgentDetails(
        **summary.model_dump(),
        instructions=definition.instructions,
        toolsets=definition.toolsets,
        tools={name: spec.summary() for name, spec in host.tools.specs.get(agent, {}).items()},
        run_timeout=definition.run_timeout,
        max_turns=host.catalog.max_turns(definition),
        config=redact(config),
        commands=sorted(SUPPORTED_COMMANDS),
    )
