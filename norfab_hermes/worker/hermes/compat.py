"""
What the worker reads from and asks of the running Hermes gateway: its
runner, the profiles' adapters, sessions, chats, turn results and agents.
Every private Hermes name used is reached here (or in ``patches`` and
``metering``), covered by ``tests/test_compat.py``; what leaves this module
is this project's typed records, never Hermes dicts.
"""

import contextlib
import json
import threading
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional

from .records import MessageRow, ModelUsage, SessionRow, TurnResult

HERMES_VERSION = "0.19.0"


PLATFORM = "norfab"


USER_ID = "norfab"  # the gateway user every NorFab request comes from; NorFab authenticates callers


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
        def _set_session_env(self, context: Any) -> List[Any]:
            # The gateway reads the channel's async-delivery flag from its default-profile
            # adapters, which a hermes worker has none of. A run ends with its NorFab job:
            # nothing may arrive after it, so delegations run inside the turn (and its budgets).
            from gateway.session_context import declare_stateless_channel

            tokens: List[Any] = super()._set_session_env(context)
            declare_stateless_channel()
            return tokens

        def _persist_active_agents(self) -> None:
            # Hermes rewrites gateway_state.json (read, merge, atomic write) at every turn's
            # start and end for its dashboard; the worker reports runs through get_status, and
            # the write was the largest single cost between a turn's answer and its reply.
            # Lifecycle transitions still update the file.
            pass

        async def _run_agent(self, *args: Any, **kwargs: Any) -> Dict[str, Any]:
            result: Dict[str, Any] = await super()._run_agent(*args, **kwargs)
            key = kwargs.get("session_key")
            if key and isinstance(result, dict):
                self.turn_results[key] = result
            return result

    runner = NorfabGatewayRunner(load_gateway_config())
    runner.turn_results = {}
    return runner


def take_turn_result(runner: Any, session_key: str) -> TurnResult:
    """The result of the session's last turn, removed from the runner."""
    raw = runner.turn_results.pop(session_key, None) or {}
    inputs, outputs = raw.get("input_tokens") or 0, raw.get("output_tokens") or 0
    return TurnResult(
        reported=bool(raw),
        final_response=raw.get("final_response") or "",
        error=str(raw["error"]) if raw.get("error") else None,
        interrupted=bool(raw.get("interrupted")),
        completed=raw.get("completed"),
        failed=bool(raw.get("failed")),
        api_calls=raw.get("api_calls") or 0,
        session_id=raw.get("session_id"),
        input_tokens=inputs,
        output_tokens=outputs,
        total_tokens=raw.get("total_tokens") or inputs + outputs,
        cost_usd=raw.get("estimated_cost_usd") if raw.get("cost_status") not in (None, "unknown") else None,
    )


def model_usage(model: Any, usage: Any) -> ModelUsage:
    """The tokens of one model answer from the ``usage`` summary of Hermes' ``post_api_request`` hook
    (its canonical buckets: prompt_tokens counts cache reads and writes, output_tokens the completion)."""
    usage = usage if isinstance(usage, dict) else {}
    return ModelUsage(
        model=str(model) if model else None,
        prompt_tokens=int(usage.get("prompt_tokens") or 0),
        completion_tokens=int(usage.get("output_tokens") or 0),
    )


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

    key: str = build_session_key(message_source(chat_id, profile), profile=profile)
    return key


def chat_session(runner: Any, key: str) -> Optional[str]:
    """The session id a gateway chat is on now."""
    session_id: Optional[str] = runner.session_store.peek_session_id(key)
    return session_id


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


def _session_row(row: Dict[str, Any]) -> SessionRow:
    return SessionRow(
        session_id=row["id"],
        agent=row.get("profile_name") or "default",
        source=row.get("source"),
        chat_id=row.get("chat_id"),
        title=row.get("title"),
        started=row.get("started_at"),
        last_active=row.get("last_active") or row.get("ended_at") or row.get("started_at"),
        message_count=row.get("message_count") or 0,
        preview=row.get("preview"),
    )


def list_sessions(runner: Any, offset: int, limit: int) -> List[SessionRow]:
    """Sessions of every profile, newest activity first (all multiplexed profiles share one state.db)."""
    rows = session_db(runner).list_sessions_rich(
        limit=limit, offset=offset, order_by_last_active=True, compact_rows=True
    )
    return [_session_row(row) for row in rows]


def get_session(runner: Any, session_id: str) -> Optional[SessionRow]:
    row = session_db(runner).get_session(session_id)
    return _session_row(row) if row else None


def session_messages(runner: Any, session_id: str) -> List[MessageRow]:
    """The session's transcript, oldest first (Hermes' session_meta bookkeeping left out)."""
    found = []
    for row in session_db(runner).get_messages(session_id):
        if row.get("role") == "session_meta":
            continue
        calls = row.get("tool_calls") or []
        if isinstance(calls, str):
            calls = json.loads(calls or "[]")
        content = row.get("content")
        found.append(
            MessageRow(
                role=row.get("role") or "unknown",
                content=content if isinstance(content, str) or content is None else json.dumps(content),
                tool_calls=[
                    {
                        "name": (c.get("function") or {}).get("name"),
                        "arguments": (c.get("function") or {}).get("arguments"),
                    }
                    for c in calls
                ],
                tool_name=row.get("tool_name"),
                timestamp=row.get("timestamp"),
            )
        )
    return found


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


def current_session_key() -> str:
    """The gateway session key of the turn this thread works for ('' outside any turn)."""
    from gateway.session_context import get_session_env

    key: str = get_session_env("HERMES_SESSION_KEY", "")
    return key


# Hermes' cron, for hermes/cron.py: the private helpers it reuses rather than copies


def cron_grace_seconds(schedule: Dict[str, Any]) -> int:
    from cron.jobs import _compute_grace_seconds

    seconds: int = _compute_grace_seconds(schedule)
    return seconds


def cron_now() -> Any:
    """Hermes' clock (a datetime in its configured time zone)."""
    from cron.jobs import _hermes_now

    return _hermes_now()


def cron_job_prompt(raw: Dict[str, Any]) -> Optional[str]:
    from cron.scheduler import _build_job_prompt

    prompt: Optional[str] = _build_job_prompt(raw)
    return prompt


def cron_is_silent(text: str) -> bool:
    from cron.scheduler import _is_cron_silence_response

    silent: bool = _is_cron_silence_response(text)
    return silent
