"""
The ``norfab`` Hermes plugin (entry point ``hermes_agent.plugins: norfab``).

Registers the NorFab platform adapter, a dispatch guard for slash commands
that would act on the host, and observers that turn agent progress into
NorFab job events of the run they belong to. Hermes loads it only where a
profile's root config lists ``plugins.enabled: [norfab]``, i.e. in hermes
workers.
"""

import logging
from typing import Any, Optional

from .compat import PLATFORM
from .models import BLOCKED_COMMANDS

log = logging.getLogger(__name__)


def _current_run() -> Optional[Any]:
    """The host run of the session this agent thread is working for."""
    from gateway.session_context import get_session_env

    from . import host

    if host.HOST is None:
        return None
    return host.HOST.run_for_session_key(get_session_env("HERMES_SESSION_KEY", ""))


def _guard_commands(event: Any = None, **_: Any) -> Optional[dict]:
    command = event.get_command() if event is not None else None
    if command in BLOCKED_COMMANDS:
        return {"action": "skip", "reason": f"/{command} is disabled in NorFab hermes workers"}
    return None


def _on_model_request(api_call_count: int = 0, **_: Any) -> None:
    run = _current_run()
    if run is not None:
        from . import host

        host.HOST.on_model_request(run, api_call_count)


def _on_tool_started(tool_name: str = "", **_: Any) -> None:
    run = _current_run()
    if run is not None:
        run.event(f"tool {tool_name} started", resource=[tool_name])


def _on_tool_finished(tool_name: str = "", duration_ms: Any = None, status: Any = None, **_: Any) -> None:
    run = _current_run()
    if run is None:
        return
    failed = str(status or "").lower() in ("error", "failed", "blocked")
    took = f" in {float(duration_ms) / 1000:.2f}s" if duration_ms is not None else ""
    run.event(
        f"tool {tool_name} {'failed' if failed else 'completed'}{took}",
        resource=[tool_name],
        severity="WARNING" if failed else "INFO",
    )


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
    ctx.register_hook("pre_tool_call", _on_tool_started)
    ctx.register_hook("post_tool_call", _on_tool_finished)
