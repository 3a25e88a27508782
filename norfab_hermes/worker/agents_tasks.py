"""Tasks that describe the agents of a worker."""

from typing import Any, Dict, List

from norfab.models import Result

from ..models import (
    SUPPORTED_COMMANDS,
    AgentDetails,
    AgentInput,
    AgentSummary,
    GetAgentResult,
    GetAgentsResult,
    TaskInput,
)
from ..redact import redact
from .host import HermesHost
from .task import HermesTask


class AgentTasks:
    @HermesTask(input=TaskInput, output=GetAgentsResult, fastapi={"methods": ["GET"]}, mcp={"annotations": {"readOnlyHint": True}})
    def get_agents(self) -> Result:
        """List the agents served by this worker with their model and availability."""
        host = self.host
        if host is None:
            return Result(result=[])
        return Result(result=[summary.model_dump() for summary in agent_summaries(host)])

    @HermesTask(
        input=AgentInput,
        output=GetAgentResult,
        fastapi={"methods": ["GET"]},
        mcp={"annotations": {"readOnlyHint": True}},
    )
    def get_agent(self, agent: str) -> Result:
        """
        Show one agent: effective instructions, tools and Hermes config, secrets redacted.

        Args:
            agent: agent name.
        """
        return Result(result=agent_details(self.running_host(), agent).model_dump())


def agent_summary(host: HermesHost, name: str, available: bool, config: Dict[str, Any]) -> AgentSummary:
    definition = host.catalog.agents.get(name)
    model = config.get("model") or {}
    return AgentSummary(
        name=name,
        description=(definition.description if definition else None) or name,
        model=model.get("default"),
        provider=model.get("provider"),
        available=available,
        error=host.catalog.errors.get(name),
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
