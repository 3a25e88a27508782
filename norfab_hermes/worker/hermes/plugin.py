"""
The ``norfab`` Hermes plugin (entry point ``hermes_agent.plugins: norfab``).

Registers the NorFab platform adapter, a dispatch guard for slash commands
that would act on the host, and observers that turn agent progress into
NorFab job events of the run they belong to and count each model answer's
tokens against its budgets. Hermes loads it only where a
profile's root config lists ``plugins.enabled: [norfab]``, i.e. in hermes
workers.
"""

import functools
import json
import logging
from typing import Any, Dict, Optional, Tuple

from ...models import BLOCKED_COMMANDS, ToolCallSummary, arguments_digest
from ...safety.redact import redact
from . import compat, port
from .compat import PLATFORM, current_session_key

log = logging.getLogger(__name__)

PLUGIN = "norfab"  # this plugin's name, enabled in the instance root's config
NORFAB_TOOLSET = "norfab"  # what agent definitions list under toolsets
# Hermes tools that save what the model writes inside the profile: it is redacted before it is saved
SAVING_TOOLS = {"memory", "skill_manage"}
# Hermes' registry toolset of all NorFab tools. Not "norfab": Hermes adds the
# tools of a toolset named like a platform to that platform's default tools,
# which would hand every agent every NorFab tool.
REGISTRY_TOOLSET = "norfab-tools"


def agent_toolset(agent: str) -> str:
    """The toolset holding exactly one agent's NorFab tools (``norfab`` in its definition)."""
    return f"norfab-agent-{agent}"


def _current() -> Tuple[Optional[port.HostPort[Any]], Optional[port.RunPort]]:
    """The host and the run of the session this agent thread works for (either may be None)."""
    host = port.current()
    if host is None:
        return None, None
    return host, host.run_for_session_key(current_session_key())


def _guard_commands(event: Any = None, **_: Any) -> Optional[Dict[str, Any]]:
    command = event.get_command() if event is not None else None
    if command in BLOCKED_COMMANDS:
        return {"action": "skip", "reason": f"/{command} is disabled in NorFab hermes workers"}
    return None


def _on_model_request(model: Any = None, approx_input_tokens: Any = 0, **_: Any) -> None:
    host, run = _current()
    if host is not None and run is not None:
        host.tune_agent(run)
        # before the request leaves: the run refuses it when it would pass a token or cost budget
        run.expect_request(str(model) if model else None, int(approx_input_tokens or 0))


def _on_model_answer(model: Any = None, usage: Any = None, **_: Any) -> None:
    run = _current()[1]
    if run is not None:
        counted = compat.model_usage(model, usage)
        run.count_usage(counted.model, counted.prompt_tokens, counted.completion_tokens)


def _guard_tools(tool_name: str = "", **_: Any) -> Optional[Dict[str, Any]]:
    """Refuse a Hermes tool that reaches the worker host unless granted to the active profile."""
    from hermes_cli.profiles import get_active_profile_name

    try:
        host = port.current()
        if _is_norfab_tool(tool_name):  # checked by the tool runner, per agent
            return None
        reason = (
            host.tool_refusal(get_active_profile_name(), tool_name) if host else "no hermes worker serves this turn"
        )
    except Exception as error:  # never let a broken check open the door
        log.error(f"Tool guard failed for {tool_name}: {error!r}")
        reason = "the worker could not check this tool"
    return {"action": "block", "message": f"{reason}; the call was not made"} if reason else None


def _redact_saved(tool_name: str = "", args: Any = None, **_: Any) -> Optional[Dict[str, Any]]:
    """What an agent saves to its memory or skills is redacted like every other output."""
    if tool_name not in SAVING_TOOLS or not isinstance(args, dict):
        return None
    host = port.current()
    masked = redact(args, host.secrets() if host else [])
    return {"args": masked} if masked != args else None


def _on_provider_error(
    status_code: Any = None, retry_count: Any = None, reason: Any = None, error: Any = None, **_: Any
) -> None:
    run = _current()[1]
    if run is not None:
        message = (error or {}).get("message") if isinstance(error, dict) else error
        run.provider_errors.append(
            {"status_code": status_code, "retry": retry_count, "reason": reason, "message": str(message or "")[:500]}
        )


def _is_norfab_tool(name: str) -> bool:
    # NorFab tools report their own, richer events and call summaries
    from tools.registry import registry

    toolset: Optional[str] = registry.get_toolset_for_tool(name)
    return toolset == REGISTRY_TOOLSET


def _on_tool_started(tool_name: str = "", **_: Any) -> None:
    run = _current()[1]
    if run is not None and not _is_norfab_tool(tool_name):
        run.event(f"tool {tool_name} started", resource=[tool_name])


def _on_tool_finished(
    tool_name: str = "",
    args: Any = None,
    duration_ms: Any = None,
    status: Any = None,
    error_message: Any = None,
    **_: Any,
) -> None:
    run = _current()[1]
    if run is None or _is_norfab_tool(tool_name):
        return
    failed = str(status or "").lower() in ("error", "failed", "blocked")
    seconds = float(duration_ms) / 1000 if duration_ms is not None else 0.0
    run.record_tool_call(
        ToolCallSummary(
            tool=tool_name,
            arguments_digest=arguments_digest(args if isinstance(args, dict) else {"args": args}),
            status="failed" if failed else "completed",
            duration=round(seconds, 3),
            error=str(error_message) if failed and error_message else None,
        )
    )
    took = f" in {seconds:.2f}s" if duration_ms is not None else ""
    run.event(
        f"tool {tool_name} {'failed' if failed else 'completed'}{took}",
        resource=[tool_name],
        severity="WARNING" if failed else "INFO",
    )


def _spec(host: port.HostPort[Any], name: str) -> Optional[Any]:
    """The active profile's definition of tool ``name`` (tools run inside the profile's scope)."""
    from hermes_cli.profiles import get_active_profile_name

    return host.tool_spec(get_active_profile_name(), name)


def _schema(name: str) -> Dict[str, Any]:
    host = port.current()
    spec = _spec(host, name) if host is not None else None
    return spec.schema if spec is not None else {}


def _call(name: str, args: Dict[str, Any], **_: Any) -> str:
    from tools.interrupt import is_interrupted

    host, run = _current()
    spec = _spec(host, name) if host is not None else None
    if host is None or spec is None:
        return json.dumps({"ok": False, "error": f"tool {name} is not granted to this agent"})
    return host.call_tool(spec, args, run, is_interrupted)


def install_tools(specs: Dict[str, Dict[str, Any]]) -> None:
    """Register every agent's NorFab tools with Hermes, one toolset per agent.

    Hermes' tool registry is process-wide and keyed by tool name, so a name
    is registered once and resolves, per call and per schema request, to the
    definition of the profile whose turn is running. Each agent's toolset
    lists only its own names, so a model never sees another agent's tools.
    """
    from tools.registry import registry
    from toolsets import create_custom_toolset

    for name in sorted({name for tools in specs.values() for name in tools}):
        owner = registry.get_toolset_for_tool(name)
        if owner not in (None, REGISTRY_TOOLSET):
            for tools in specs.values():
                if name in tools:
                    tools[name].error = f"the name is taken by Hermes' own '{owner}' toolset; rename the tool"
            continue
        registry.register(
            name=name,
            toolset=REGISTRY_TOOLSET,
            schema={"name": name, "description": "NorFab task", "parameters": {"type": "object", "properties": {}}},
            handler=functools.partial(_call, name),
            dynamic_schema_overrides=functools.partial(_schema, name),
            max_result_size_chars=float("inf"),  # results are bounded by the tool runner
        )
    for agent, tools in specs.items():
        create_custom_toolset(agent_toolset(agent), f"NorFab tools of agent {agent}", tools=sorted(tools))


def _adapter_factory(config: Any) -> Any:
    from .adapter import NorfabAdapter

    return NorfabAdapter(config)


def register(ctx: Any) -> None:
    ctx.register_platform(
        name=PLATFORM,
        label="NorFab",
        adapter_factory=_adapter_factory,
        check_fn=lambda: True,
        # enabled only where a profile's config says so, never auto-enabled
        is_connected=lambda config: False,
        platform_hint=(
            "You are serving network engineers through NorFab. Reply in plain text or Markdown; "
            "base findings on tool output and say which device and command they came from."
        ),
        allow_update_command=False,
    )
    ctx.register_hook("pre_gateway_dispatch", _guard_commands)
    ctx.register_hook("pre_api_request", _on_model_request)
    ctx.register_hook("post_api_request", _on_model_answer)
    ctx.register_hook("pre_tool_call", _guard_tools)
    ctx.register_hook("api_request_error", _on_provider_error)
    ctx.register_hook("pre_tool_call", _on_tool_started)
    ctx.register_hook("post_tool_call", _on_tool_finished)
    ctx.register_middleware("tool_request", _redact_saved)
