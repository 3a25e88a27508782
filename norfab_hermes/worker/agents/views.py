"""
Agents as the get_agents and get_agent tasks show them: definition, model,
state, owner, host tools, NorFab tools, effective config with secrets masked.
"""

from typing import Any, Dict, List

from ...models import SUPPORTED_COMMANDS, AgentDefinition, AgentDetails, AgentSummary
from ...safety.redact import redact
from .catalog import AgentCatalog


def agent_summary(
    catalog: AgentCatalog, specs: Dict[str, Any], worker: str, name: str, available: bool, config: Dict[str, Any]
) -> AgentSummary:
    definition = catalog.agents.get(name)
    model = config.get("model") or {}
    return AgentSummary(
        name=name,
        description=(definition.description if definition else None) or name,
        model=model.get("default"),
        provider=model.get("provider"),
        available=available,
        error=catalog.errors.get(name),
        worker=worker,
        owner=catalog.owners.get(name),
        state=catalog.state(name),
        host_tools=catalog.host_tools(name),
        tools={tool: spec.tool_class.shown() for tool, spec in specs.items()},
    )


def agent_summaries(
    catalog: AgentCatalog, specs: Dict[str, Dict[str, Any]], worker: str, availability: Dict[str, bool]
) -> List[AgentSummary]:
    """Every agent as get_agents shows it; ``specs`` are the tools of each."""
    return [
        agent_summary(
            catalog,
            specs.get(name, {}),
            worker,
            name,
            available,
            catalog.effective_config(name) if name in catalog.agents else {},
        )
        for name, available in availability.items()
    ]


def agent_details(
    catalog: AgentCatalog,
    specs: Dict[str, Any],
    worker: str,
    availability: Dict[str, bool],
    definition: AgentDefinition,
    agent: str,
) -> AgentDetails:
    """An agent that can take runs, as get_agent shows it; ``specs`` are its tools and delegates."""
    config = catalog.effective_config(agent)
    summary = agent_summary(catalog, specs, worker, agent, availability[agent], config)
    return AgentDetails(
        **summary.model_dump(exclude={"tools"}),
        instructions=definition.instructions,
        toolsets=definition.toolsets,
        tools={name: spec.summary() for name, spec in specs.items()},
        run_timeout=definition.run_timeout,
        max_turns=catalog.max_turns(definition),
        config=redact(config),
        commands=sorted(SUPPORTED_COMMANDS),
    )
