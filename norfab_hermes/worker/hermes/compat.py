"""
The one place that touches Hermes Agent internals.

Every private Hermes API norfab-hermes relies on is reached through this
module, so upgrading the pinned ``hermes-agent`` means reading this file and
running ``tests/test_compat.py`` (contract tests against the installed
version). Import it only after ``HERMES_HOME`` points at the worker's
instance root: Hermes freezes that path in module constants at import.
"""

import contextlib
import functools
import json
import os
import threading
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional

HERMES_VERSION = "0.19.0"
PLATFORM = "norfab"
USER_ID = "norfab"  # the gateway user every NorFab request comes from; NorFab authenticates callers
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
    _replies_leave_when_the_agent_finishes()
    _no_project_context_files()
    _model_requests_keep_their_turn()


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
            super().__init__(*args, target=target, **kwargs)

    class TurnThreading(types.ModuleType):
        Thread = TurnThread

        def __getattr__(self, name: str) -> Any:
            return getattr(threading, name)

    helpers.threading = TurnThreading("threading")


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
            return pickle.loads(pickle.dumps(cached, pickle.HIGHEST_PROTOCOL))
        except Exception:  # not plain data after all
            return copy.deepcopy(cached)

    for module in list(sys.modules.values()):
        if getattr(module, "__dict__", {}).get("load_config") is original:
            module.load_config = load_config


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
            caller = sys._getframe(1)
            if caller.f_code.co_name == "_start_stream_consumer" and caller.f_locals.get("_", 0) < QUICK_LOOKUPS:
                return asyncio.sleep(QUICK_LOOKUP, result)
            if caller.f_code.co_name == "run" and caller.f_globals is vars(stream_consumer):
                consumer = caller.f_locals["self"]
                wake = consumer.__dict__.setdefault("_norfab_wake", (asyncio.get_running_loop(), asyncio.Event()))
                return sleep_until_woken(wake[1], delay)
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
    from hermes_cli.profiles import get_active_profile_name

    read_root = gateway_run._current_max_iterations

    def current_max_iterations() -> int:
        iterations = iterations_for(get_active_profile_name())
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


@contextlib.contextmanager
def profile_scope(home: Path) -> Iterator[None]:
    """Hermes' per-profile home override plus secret scope, as used for agent turns."""
    from gateway.run import _profile_runtime_scope

    with _profile_runtime_scope(home):
        yield


def platform() -> Any:
    from gateway.config import Platform

    return Platform(PLATFORM)


def make_runner() -> Any:
    """A GatewayRunner that keeps the raw result of each agent turn, on channels that take nothing after a turn.

    The gateway turns an agent run into reply text; NorFab callers also need
    the stop reason, usage and tool calls, which only the ``run_conversation``
    result holds. Nested follow-up turns finish first, so the outermost result
    is the one left in ``turn_results``.
    """
    from gateway.config import load_gateway_config
    from gateway.run import GatewayRunner

    class NorfabGatewayRunner(GatewayRunner):
        def _set_session_env(self, context: Any) -> list:
            # The gateway reads the channel's async-delivery flag from its default-profile
            # adapters, which a hermes worker has none of. A run ends with its NorFab job:
            # nothing may arrive after it, so delegations run inside the turn (and its budgets).
            from gateway.session_context import declare_stateless_channel

            tokens = super()._set_session_env(context)
            declare_stateless_channel()
            return tokens

        def _persist_active_agents(self) -> None:
            # Hermes rewrites gateway_state.json (read, merge, atomic write) at every turn's
            # start and end for its dashboard; the worker reports runs through get_status, and
            # the write was the largest single cost between a turn's answer and its reply.
            # Lifecycle transitions still update the file.
            pass

        async def _run_agent(self, *args: Any, **kwargs: Any) -> Dict[str, Any]:
            result = await super()._run_agent(*args, **kwargs)
            key = kwargs.get("session_key")
            if key and isinstance(result, dict):
                self.turn_results[key] = result
            return result

    runner = NorfabGatewayRunner(load_gateway_config())
    runner.turn_results = {}
    return runner


def take_turn_result(runner: Any, session_key: str) -> Dict[str, Any]:
    """The raw ``run_conversation`` result of the session's last turn, removed from the runner."""
    return runner.turn_results.pop(session_key, None) or {}


def profile_adapters(runner: Any, profile: str) -> Dict[Any, Any]:
    """The live adapters serving ``profile`` by platform (multiplexed profiles)."""
    return runner._profile_adapters.get(profile) or {}


async def start_profile(runner: Any, profile: str, home: Path) -> None:
    """Create and connect the profile's adapters in the running gateway (its config is read now)."""
    await runner._start_one_profile_adapters(profile, home, {})


async def stop_profile(runner: Any, profile: str) -> None:
    """Disconnect and drop the profile's adapters; messages for it are refused from now on."""
    for adapter in (runner._profile_adapters.pop(profile, None) or {}).values():
        await adapter.disconnect()


def profile_adapter(runner: Any, profile: str) -> Optional[Any]:
    """The NorFab adapter instance serving ``profile``."""
    return profile_adapters(runner, profile).get(platform())


def message_source(chat_id: str, profile: str) -> Any:
    """Where a NorFab request comes from, as the gateway sees it: a DM chat of the NorFab user."""
    from gateway.session import SessionSource

    return SessionSource(
        platform=platform(),
        chat_id=chat_id,
        chat_name=chat_id,
        chat_type="dm",
        user_id=USER_ID,
        user_name=USER_ID,
        profile=profile,
    )


def session_key(chat_id: str, profile: str) -> str:
    """The gateway's session key for a NorFab chat of ``profile``."""
    from gateway.session import build_session_key

    return build_session_key(message_source(chat_id, profile), profile=profile)


def chat_session(runner: Any, key: str) -> Optional[str]:
    """The session id a gateway chat is on now."""
    return runner.session_store.peek_session_id(key)


def bind_chat(runner: Any, key: str, session_id: str) -> None:
    """Point a gateway chat at an existing session, so its next turn continues it."""
    if runner.session_store.peek_session_id(key) != session_id:
        runner.session_store.switch_session(key, session_id)


def chat_is_busy(adapter: Any, session_key: str) -> bool:
    """Whether the adapter's chat has a turn in progress (the gateway then answers commands inline)."""
    return session_key in adapter._active_sessions


def is_hermes_queue_handler(handler: Any) -> bool:
    """Whether ``handler`` is the queue handler Hermes' logging setup put on the root logger."""
    return bool(getattr(handler, "_hermes_queue", False))


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


def settle_cut_turns(runner: Any, home: Path, cut_keys: Any, note: str) -> List[str]:
    """Before ``runner.start()``: never resume a turn on its own, record each cut turn.

    After a crash Hermes marks recently active sessions ``resume_pending``
    and, at start, runs their last turn again with no message from anyone
    (``suspend_recently_active``, ``_schedule_resume_pending_sessions``).
    Upstream's own clean-shutdown marker stops the marking, and pending
    flags left by a slow stop are cleared. Each session in ``cut_keys`` (runs
    in flight when the worker went down), or that Hermes had flagged, whose
    transcript ends unanswered gets ``note`` as the assistant's reply, so
    the next message is answered for itself. Returns the noted session ids.
    """
    (home / ".clean_shutdown").touch()
    (home / ".restart_failure_counts").unlink(missing_ok=True)  # would suspend, i.e. replace, sessions
    store = runner.session_store
    noted = []
    for entry in store.list_sessions():
        pending = entry.resume_pending and store.clear_resume_pending(entry.session_key)
        if (pending or entry.session_key in cut_keys) and close_unanswered_turn(runner, entry.session_id, note):
            noted.append(entry.session_id)
    return noted


def close_unanswered_turn(runner: Any, session_id: Optional[str], note: str) -> bool:
    """Append ``note`` as the assistant's reply when the session's last turn has none.

    Without it Hermes merges the unanswered message into the next one and
    the model answers both.
    """
    if not session_id:
        return False
    rows = [m for m in session_db(runner).get_messages(session_id) if m.get("role") != "session_meta"]
    tail = rows[-1] if rows else None
    if tail is None or not (
        tail["role"] in ("user", "tool") or (tail["role"] == "assistant" and tail.get("tool_calls"))
    ):
        return False
    store = runner.session_store
    calls = tail.get("tool_calls") if tail["role"] == "assistant" else None
    if isinstance(calls, str):
        calls = json.loads(calls or "[]")
    for call in calls or []:
        # answer orphan tool calls first: Hermes merges consecutive assistant messages
        store.append_to_transcript(session_id, {"role": "tool", "tool_call_id": call.get("id"), "content": note})
    store.append_to_transcript(session_id, {"role": "assistant", "content": note})
    return True


# paths of the requests that ask a model for an answer (the ones a provider bills)
MODEL_ENDPOINTS = ("/chat/completions", "/completions", "/responses", "/messages", "/embeddings")


class ModelRequestRefused(Exception):
    """A model request the worker does not make: no run, or the run's budget is spent."""


def current_session_key() -> str:
    """The gateway session key of the turn this thread works for ('' outside any turn)."""
    from gateway.session_context import get_session_env

    return get_session_env("HERMES_SESSION_KEY", "")


def meter_model_requests(admit: Any) -> None:
    """Every model request of the worker asks ``admit(session_key)`` before it is sent.

    Hermes makes model requests from its agent loop, its subagents and its
    auxiliary tasks (titles, compression, memory), each through an httpx
    client; ``admit`` returns why a request must not be made (no run it
    belongs to, or its run's budget spent) or None. A refused request is
    never sent. Requests in flight are tracked per session, so that a turn
    given up on can have its sockets closed (:func:`abort_model_requests`).
    """
    import httpx

    def _admit(client: Any, request: Any) -> None:
        if request.method != "POST" or not request.url.path.rstrip("/").endswith(MODEL_ENDPOINTS):
            return
        key = current_session_key()
        reason = admit(key)
        if reason:
            raise ModelRequestRefused(reason)
        # a streamed reply is read after send() returns: the client stays
        # listed until the turn is over (forget) or given up on (abort)
        with _IN_FLIGHT_LOCK:
            _IN_FLIGHT.setdefault(key, {})[id(client)] = client

    def metered(send: Any) -> Any:
        @functools.wraps(send)
        def metered_send(client: Any, request: Any, *args: Any, **kwargs: Any) -> Any:
            _admit(client, request)
            return send(client, request, *args, **kwargs)

        return metered_send

    def ametered(send: Any) -> Any:
        @functools.wraps(send)
        async def metered_send(client: Any, request: Any, *args: Any, **kwargs: Any) -> Any:
            _admit(client, request)
            return await send(client, request, *args, **kwargs)

        return metered_send

    httpx.Client.send = metered(httpx.Client.send)
    httpx.AsyncClient.send = ametered(httpx.AsyncClient.send)


_IN_FLIGHT: Dict[str, Dict[int, Any]] = {}  # session key -> httpx clients that sent model requests in its turn
_IN_FLIGHT_LOCK = threading.Lock()


def forget_model_requests(key: str) -> None:
    """The session's turn is over: its clients are no longer in flight."""
    with _IN_FLIGHT_LOCK:
        _IN_FLIGHT.pop(key, None)


def abort_model_requests(key: str) -> int:
    """Shut down the sockets of every model request the session's turn has open; how many.

    Hermes' own interrupt does this for the agent it knows about; a turn
    given up on before its agent existed, or a subagent's request, would
    otherwise keep a thread waiting on a provider that never answers.
    """
    import socket
    import types

    import agent.agent_runtime_helpers as helpers

    with _IN_FLIGHT_LOCK:
        clients = list(_IN_FLIGHT.pop(key, {}).values())
    closed = 0
    for client in clients:
        for sock in helpers._iter_pool_sockets(types.SimpleNamespace(_client=client)):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
                closed += 1
    return closed
