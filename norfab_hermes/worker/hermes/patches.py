"""
Changes norfab-hermes makes to Hermes Agent when a worker imports it: each
replaces one private Hermes name, says why, and has a contract test in
``tests/test_compat.py`` (an upgrade fails there by name). Import only after
``HERMES_HOME`` points at the worker's instance root: Hermes freezes that
path in module constants at import.
"""

import contextlib
import functools
import os
import threading
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, Optional

CA_VARIABLES = ("HERMES_CA_BUNDLE", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "SSL_CERT_DIR")


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
    _disable_request_dumps()
    _abort_mounted_sockets()
    _subagents_work_for_their_turn()
    _share_tls_contexts()
    _cheaper_config_copies()
    _session_commits_wait_for_the_os()
    _replies_leave_when_the_agent_finishes()
    _no_project_context_files()
    _model_requests_keep_their_turn()
    _skills_stay_in_their_profile()


def _model_requests_keep_their_turn() -> None:
    # Hermes sends each model request from a thread of its own (so that an
    # interrupt can abandon it), started without the turn's context: the
    # request would not know the session, nor so the run, it belongs to.
    # Threads that module starts run in the context of whoever started them.
    import contextvars
    import types

    import agent.chat_completion_helpers as helpers

    class TurnThread(threading.Thread):
        def __init__(self, *args: Any, target: Any = None, **kwargs: Any) -> None:
            if target is not None:
                target = functools.partial(contextvars.copy_context().run, target)
            super().__init__(*args, target=target, **kwargs)  # type: ignore[misc]  # target is keyword-only here

    class TurnThreading(types.ModuleType):
        Thread = TurnThread

        def __getattr__(self, name: str) -> Any:
            return getattr(threading, name)

    helpers.threading = TurnThreading("threading")


def _skills_stay_in_their_profile() -> None:
    # When a skill is not found, Hermes' skill manager searches every other
    # profile of the instance and names those that have a skill of that name:
    # one agent could learn what another agent saved. Every agent is a
    # profile of one worker here, and an agent's skills stay its own.
    import tools.skill_manager_tool as skill_manager

    skill_manager._find_skill_in_other_profiles = lambda name: []


def _no_project_context_files() -> None:
    # Hermes adds one project context file (.hermes.md, AGENTS.md, CLAUDE.md,
    # .cursorrules) from the terminal working directory to the system prompt;
    # in a hosted gateway that falls back to the worker's working or home
    # directory, so whoever can write a file there would steer every agent.
    # A hosted agent's instructions are its SOUL.md, written from its definition.
    import agent.agent_init as agent_init

    init = agent_init.init_agent

    @functools.wraps(init)
    def init_agent(agent: Any, *args: Any, **kwargs: Any) -> Any:
        kwargs.update(skip_context_files=True, load_soul_identity=True)
        return init(agent, *args, **kwargs)

    agent_init.init_agent = init_agent


def _share_tls_contexts() -> None:
    # Hermes builds a new OpenAI client, with its own httpx transports, for
    # every model request, and each resolves TLS verification by loading the
    # CA bundle again: about a third of a turn's CPU in the worker. One
    # context per setting serves every client (a CA bundle changed on disk
    # is read at the next worker start).
    import agent.ssl_verify as ssl_verify
    import httpx

    resolve = ssl_verify.resolve_httpx_verify
    contexts: Dict[Any, Any] = {}

    def resolve_httpx_verify(*, ca_bundle: Any = None, ssl_verify: Any = None, base_url: str = "") -> Any:
        key = (ca_bundle, str(ssl_verify), tuple(os.environ.get(name, "") for name in CA_VARIABLES))
        if key not in contexts:
            verify = resolve(ca_bundle=ca_bundle, ssl_verify=ssl_verify, base_url=base_url)
            if verify is False:  # verification off: Hermes warns on every client, as it should
                return verify
            contexts[key] = httpx.create_ssl_context() if verify is True else verify
        return contexts[key]

    ssl_verify.resolve_httpx_verify = resolve_httpx_verify


def _cheaper_config_copies() -> None:
    # load_config() hands each caller a deep copy of the cached config, some
    # twenty times per turn: the largest holder of the GIL under load. A
    # pickle round trip makes the same private copy of plain YAML data at a
    # third of the cost. Modules that imported the function get this one too.
    import copy
    import pickle
    import sys

    import hermes_cli.config as config

    original = config.load_config

    def load_config() -> Dict[str, Any]:
        cached = config.load_config_readonly()
        try:
            copied: Dict[str, Any] = pickle.loads(pickle.dumps(cached, pickle.HIGHEST_PROTOCOL))
            return copied
        except Exception:  # not plain data after all
            return copy.deepcopy(cached)

    for module in list(sys.modules.values()):
        if getattr(module, "__dict__", {}).get("load_config") is original:
            module.load_config = load_config  # type: ignore[attr-defined]  # found on it by the line above


def _session_commits_wait_for_the_os() -> None:
    # Hermes' session database (state.db, WAL) keeps SQLite's default
    # synchronous=FULL on Linux: every commit waits for an fsync, and a turn
    # makes a dozen commits, on its own path and holding the database lock the
    # gateway's other sessions wait for. In WAL mode NORMAL loses no commit
    # when the process dies (kill -9 included); only a power cut can take the
    # last ones, as with NorFab's job database and our records. Hermes forces
    # FULL on macOS for a corruption risk there, and keeps it.
    import sys

    import hermes_state

    apply = hermes_state.apply_wal_with_fallback

    @functools.wraps(apply)
    def apply_wal_with_fallback(conn: Any, *args: Any, **kwargs: Any) -> str:
        mode = apply(conn, *args, **kwargs)
        if mode == "wal" and sys.platform != "darwin":
            conn.execute("PRAGMA synchronous=NORMAL")
        return str(mode)

    hermes_state.apply_wal_with_fallback = apply_wal_with_fallback


STREAM_POLL = 0.05  # seconds: how often the gateway looks for a turn's stream consumer, and the consumer at its queue


QUICK_LOOKUP, QUICK_LOOKUPS = 0.005, 20  # the gateway's first look-ups for a consumer: 100 ms of them


def _replies_leave_when_the_agent_finishes() -> None:
    # The gateway starts a turn's stream consumer by looking every 50 ms for
    # the agent to have made one, and the consumer looks at its queue every
    # 50 ms: a reply waited up to 100 ms after the agent had finished. The
    # first look-ups now come every 5 ms, and a finishing agent wakes its
    # consumer. Only those two sleeps change; every other one is Hermes' own.
    import asyncio
    import sys
    import types

    import gateway.run as gateway_run
    import gateway.stream_consumer as stream_consumer

    consumer_class = stream_consumer.GatewayStreamConsumer
    finish = consumer_class.finish

    @functools.wraps(finish)
    def finish_and_wake(self: Any) -> None:
        finish(self)
        wake = self.__dict__.get("_norfab_wake")
        if wake is not None:
            with contextlib.suppress(RuntimeError):  # the loop is gone: nobody waits
                wake[0].call_soon_threadsafe(wake[1].set)

    async def sleep_until_woken(wake: asyncio.Event, delay: float) -> None:
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(wake.wait(), delay)
        wake.clear()

    class PromptAsyncio(types.ModuleType):
        def __getattr__(self, name: str) -> Any:
            return getattr(asyncio, name)

        @staticmethod
        def sleep(delay: float, result: Any = None) -> Any:
            if delay != STREAM_POLL:
                return asyncio.sleep(delay, result)
            try:
                caller = sys._getframe(1)
                if caller.f_code.co_name == "_start_stream_consumer" and caller.f_locals.get("_", 0) < QUICK_LOOKUPS:
                    return asyncio.sleep(QUICK_LOOKUP, result)
                if caller.f_code.co_name == "run" and caller.f_globals is vars(stream_consumer):
                    consumer = caller.f_locals["self"]
                    wake = consumer.__dict__.setdefault("_norfab_wake", (asyncio.get_running_loop(), asyncio.Event()))
                    return sleep_until_woken(wake[1], delay)
            except (AttributeError, KeyError, TypeError, ValueError, RuntimeError):
                pass  # a caller shaped otherwise than 0.19's: Hermes' own 50 ms sleep
            return asyncio.sleep(delay, result)

    consumer_class.finish = finish_and_wake
    gateway_run.asyncio = stream_consumer.asyncio = PromptAsyncio("asyncio")


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


def _disable_request_dumps() -> None:
    # After a failed model request Hermes writes the whole request - system
    # prompt, device output, part of the API key and the provider's error,
    # which may quote the key - to <profile>/sessions/request_dump_*.json.
    # The run's warnings carry the provider's answer instead.
    import run_agent

    run_agent.AIAgent._dump_api_request_debug = lambda self, *args, **kwargs: None


def _abort_mounted_sockets() -> None:
    # An interrupt aborts the model request by shutting down the sockets of
    # the request's httpx pool, but Hermes only looks in the client's default
    # transport while its clients send through per-scheme mounted transports:
    # nothing is shut down, and with no read timeout (streaming) a request to
    # a hung provider keeps its thread and socket forever. Walk the mounts too.
    import types

    import agent.agent_runtime_helpers as helpers

    default_pool_sockets = helpers._iter_pool_sockets

    def iter_pool_sockets(client: Any) -> Iterator[Any]:
        yield from default_pool_sockets(client)
        mounts = getattr(getattr(client, "_client", None), "_mounts", None) or {}
        for transport in mounts.values():
            yield from default_pool_sockets(types.SimpleNamespace(_client=types.SimpleNamespace(_transport=transport)))

    helpers._iter_pool_sockets = iter_pool_sockets


def _subagents_work_for_their_turn() -> None:
    # Hermes runs a subagent (delegate_task) on a pool thread that starts
    # with an empty context: no profile scope and no session, so its tools
    # would not find the profile's grants or the run's budgets. Work handed
    # to Hermes' daemon pools runs in the context of whoever handed it over,
    # as asyncio.to_thread does.
    import contextvars

    from tools.daemon_pool import DaemonThreadPoolExecutor

    submit = DaemonThreadPoolExecutor.submit

    def submit_in_context(self: Any, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        return submit(self, contextvars.copy_context().run, fn, *args, **kwargs)

    DaemonThreadPoolExecutor.submit = submit_in_context


def serve_profile_secrets(secrets_for: Any) -> None:
    """Give each profile's secret scope the worker's in-memory secrets.

    In multiplexed mode Hermes reads provider keys only from the profile's
    ``.env`` (``build_profile_secret_scope``, used for turns and cron runs).
    ``secrets_for(home)`` adds the values the worker read from its own
    environment, so no key is ever written to disk; a native profile's own
    ``.env`` still counts, the worker's values win.
    """
    import agent.secret_scope as secret_scope

    read_env_file = secret_scope.build_profile_secret_scope

    def build_profile_secret_scope(hermes_home: Path) -> Dict[str, str]:
        return {**read_env_file(hermes_home), **secrets_for(Path(hermes_home))}

    secret_scope.build_profile_secret_scope = build_profile_secret_scope


def per_profile_iterations(iterations_for: Any) -> None:
    """Give each multiplexed profile its own iteration budget.

    The gateway reads one budget for every profile (``_current_max_iterations``,
    from the instance root) when it builds or reuses an agent for a turn,
    inside the turn's profile scope. ``iterations_for(profile)`` answers for
    the profiles the worker serves (None: the root's budget).
    """
    import gateway.run as gateway_run
    from hermes_constants import get_hermes_home

    read_root: Callable[[], int] = gateway_run._current_max_iterations

    def current_max_iterations() -> int:
        # a served profile's scope is <root>/profiles/<agent>: read from the path (Hermes' own
        # get_active_profile_name resolves three paths on disk, on every turn)
        home = get_hermes_home()
        iterations = iterations_for(home.name) if home.parent.name == "profiles" else None
        return iterations if iterations is not None else read_root()

    gateway_run._current_max_iterations = current_max_iterations


def _disarm_shutdown_watchdog() -> None:
    # GatewayRunner.stop() arms a thread that os._exit()s the process when
    # teardown is slow. In a NorFab worker that would kill the worker under
    # NorFab's feet; the host bounds its own shutdown instead.
    import gateway.run as gateway_run

    def arm_nothing(*args: Any, done_event: Optional[threading.Event] = None, **kwargs: Any) -> threading.Event:
        return done_event or threading.Event()

    gateway_run.arm_shutdown_watchdog = arm_nothing
