"""
The one place that touches Hermes Agent internals.

Every private Hermes API norfab-hermes relies on is reached through this
module, so upgrading the pinned ``hermes-agent`` means reading this file and
running ``tests/test_compat.py`` (contract tests against the installed
version). Import it only after ``HERMES_HOME`` points at the worker's
instance root: Hermes freezes that path in module constants at import.
"""

import contextlib
import os
import threading
from pathlib import Path
from typing import Any, Dict, Iterator, Optional

HERMES_VERSION = "0.19.0"
PLATFORM = "norfab"


def import_hermes() -> None:
    """Import the Hermes modules that freeze HERMES_HOME, outside any profile scope."""
    import cron.executions  # noqa: F401
    import cron.jobs  # noqa: F401
    import cron.scheduler  # noqa: F401
    import gateway.run  # noqa: F401
    import hermes_state  # noqa: F401
    import model_tools  # noqa: F401
    import run_agent  # noqa: F401

    _disarm_shutdown_watchdog()


def check_ca_bundle_once() -> Optional[str]:
    """Validate the TLS CA bundle now instead of for every new agent.

    Hermes re-loads the CA bundle to validate it each time it builds an
    agent (over half of a new session's CPU time). Checked once here; on
    failure the per-agent check stays on so every run reports it.
    """
    from agent.ssl_guard import verify_ca_bundle

    try:
        verify_ca_bundle()
    except Exception as error:
        return str(error)
    os.environ["HERMES_SKIP_SSL_GUARD"] = "1"
    return None


def _disarm_shutdown_watchdog() -> None:
    # GatewayRunner.stop() arms a thread that os._exit()s the process when
    # teardown is slow. In a NorFab worker that would kill the worker under
    # NorFab's feet; the host bounds its own shutdown instead.
    import gateway.run as gateway_run

    def arm_nothing(*args: Any, done_event: Optional[threading.Event] = None, **kwargs: Any) -> threading.Event:
        return done_event or threading.Event()

    gateway_run.arm_shutdown_watchdog = arm_nothing


@contextlib.contextmanager
def profile_scope(home: Path) -> Iterator[None]:
    """Hermes' per-profile home override plus secret scope, as used for agent turns."""
    from gateway.run import _profile_runtime_scope

    with _profile_runtime_scope(home):
        yield


def platform() -> Any:
    from gateway.config import Platform

    return Platform(PLATFORM)


def make_runner(config: Any) -> Any:
    """A GatewayRunner that also keeps the raw result of each agent turn.

    The gateway turns an agent run into reply text; NorFab callers also need
    the stop reason, usage and tool calls, which only the ``run_conversation``
    result holds. Nested follow-up turns finish first, so the outermost result
    is the one left in ``turn_results``.
    """
    from gateway.run import GatewayRunner

    class NorfabGatewayRunner(GatewayRunner):
        async def _run_agent(self, *args: Any, **kwargs: Any) -> Dict[str, Any]:
            result = await super()._run_agent(*args, **kwargs)
            key = kwargs.get("session_key")
            if key and isinstance(result, dict):
                self.turn_results[key] = result
            return result

    runner = NorfabGatewayRunner(config)
    runner.turn_results = {}
    return runner


def profile_adapter(runner: Any, profile: str) -> Optional[Any]:
    """The NorFab adapter instance serving ``profile`` (multiplexed profiles)."""
    return (runner._profile_adapters.get(profile) or {}).get(platform())


def running_agent(runner: Any, session_key: str) -> Optional[Any]:
    """The AIAgent running a turn for ``session_key``; None before it exists."""
    agent = runner._running_agents.get(session_key)
    return agent if hasattr(agent, "interrupt") else None


def tune(agent: Any) -> None:
    """Settings the gateway does not expose, for agents it built.

    No forced console prints (they would reach the worker's stdout), and no
    1 s pause between sequential tool calls: NorFab tools bound their own
    concurrency per target worker.
    """
    agent.suppress_status_output = True
    agent.tool_delay = 0.0


def session_db(runner: Any) -> Any:
    """The runner's SessionDB (state.db shared by all multiplexed profiles)."""
    return runner._session_db._db


TURN_POOL_HEADROOM = 2  # executor threads for gateway work other than agent turns


def size_turn_pool(runner: Any, runs: int) -> None:
    """Size the gateway's agent-turn executor (10 threads upstream) to the worker's run limit."""
    import concurrent.futures

    runner._executor_lock = threading.Lock()
    runner._executor = concurrent.futures.ThreadPoolExecutor(
        max_workers=runs + TURN_POOL_HEADROOM, thread_name_prefix="hermes-gateway"
    )
