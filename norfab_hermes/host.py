"""
The Hermes runtime of one hermes worker.

``HermesHost`` owns the instance root (``HERMES_HOME``), renders one native
profile per agent, runs Hermes' multiplexed ``GatewayRunner`` on an asyncio
loop in its own thread, and keeps the registry of runs in flight. NorFab job
threads call into it synchronously; budgets (wall clock, model calls) and
interrupts are enforced here, because NorFab has no job cancellation and the
gateway reads its iteration budget from one process-wide setting.
"""

import asyncio
import concurrent.futures
import contextlib
import json
import logging
import os
import sys
import threading
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional

import yaml

from . import norfab_tools, profiles
from .models import (
    SUPPORTED_COMMANDS,
    ActiveRun,
    AgentDefinition,
    CommandResultData,
    HermesInventory,
    InterruptResultData,
    InvokeResultData,
    RunUsage,
    SessionDetails,
    SessionMessage,
    SessionSummary,
    StopReason,
    ToolCallSummary,
)
from .norfab_tools import ToolRunner, ToolSpec
from .redact import scrub

log = logging.getLogger(__name__)

HOST: Optional["HermesHost"] = None  # the plugin reaches the running host here
POLL = 0.1  # seconds between budget checks of a waiting run
GRACE = 5.0  # seconds an interrupted turn gets to wind down
JOB_TIMEOUT_MARGIN = 3.0  # seconds between the end of a run budget and the NorFab job timeout
COMMAND_TIMEOUT = 60.0
TOOL_RETRY_INTERVAL = 30.0  # seconds between retries of tools whose service did not answer
ASK_TIMEOUT = 300.0  # longest wait for an operator's answer, within the run budget
FINISHED_RUNS_KEPT = 200
# arguments a supported command may take through NorFab ("" = none)
COMMAND_ARGUMENTS = {"memory": ("", "pending"), "usage": ("",)}
START_TIMEOUT = 120.0
STOP_TIMEOUT = 15.0
# Hermes modules that freeze HERMES_HOME when first imported
IN_FLIGHT_FILE = "norfab_runs_in_flight.json"
CUT_BY_RESTART = (
    "[This turn was cut short: the hermes worker stopped before it finished, and it was not resumed. "
    "The request above was not completed; answer the next message for itself.]"
)
FREEZING_MODULES = ("run_agent", "gateway.run", "hermes_state", "cron.jobs", "model_tools")


class AgentUnavailable(LookupError):
    """The named agent does not exist on this worker or cannot take runs."""


class UnknownSession(LookupError):
    """The session id is not one of the agent's sessions on this worker."""


class Busy(RuntimeError):
    """Every run slot and queue place of the worker is taken."""


class UnknownRun(LookupError):
    """The run id is not running on this worker."""


class Run:
    """One invoke in flight: its budgets, progress and what ended it."""

    def __init__(
        self,
        agent: str,
        chat_id: str,
        session_key: str,
        budget: float,
        max_turns: int,
        job: Any,
        interactive: bool = False,
    ):
        self.run_id = uuid.uuid4().hex[:12]
        self.agent = agent
        self.chat_id = chat_id
        self.session_key = session_key
        self.session_id: Optional[str] = None
        self.job = job
        self.job_uuid = getattr(job, "juuid", None)
        self.started = time.time()
        self.deadline = self.started + budget
        self.max_turns = max_turns
        self.interactive = interactive
        self.stop_reason: Optional[str] = None
        self.stop_message = ""
        self.api_calls = 0
        self.provider_errors: List[Dict[str, Any]] = []  # failed model requests, as Hermes reported them
        self.tool_calls: List[ToolCallSummary] = []
        self.warnings: List[str] = []

    def event(self, message: str, **kwargs: Any) -> None:
        try:
            self.job.event(message, **kwargs)
        except Exception as error:  # events are best effort, never fail a run
            log.debug(f"Run {self.run_id} event failed: {error}")

    def stop(self, reason: str, message: str) -> None:
        if self.stop_reason is None:
            self.stop_reason, self.stop_message = reason, message

    def remaining(self) -> float:
        return max(0.0, self.deadline - time.time())

    def summary(self) -> ActiveRun:
        return ActiveRun(
            run_id=self.run_id,
            job_uuid=self.job_uuid,
            agent=self.agent,
            session_id=self.session_id,
            started=datetime.fromtimestamp(self.started, timezone.utc).isoformat(),
        )


class HermesHost:
    def __init__(
        self,
        worker_name: str,
        root: Path,
        inventory: HermesInventory,
        agents: Dict[str, AgentDefinition],
        errors: Dict[str, str],
        client: Any = None,
    ):
        self.worker_name = worker_name
        self.client = client  # the worker's NFPClient, for NorFab tools
        self.root = Path(root)
        self.inventory = inventory
        self.agents = agents
        self.errors = dict(errors)  # agent name -> why it is unavailable
        self.warnings: List[str] = []  # worker-wide problems that do not stop every agent
        self.loop: Optional[asyncio.AbstractEventLoop] = None
        self.runner: Any = None
        self.stopping = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._started = threading.Event()
        self._start_error: Optional[str] = None
        self._runs: Dict[str, Run] = {}
        self._runs_by_key: Dict[str, Run] = {}
        self._registry_lock = threading.Lock()
        self._chat_locks: Dict[str, threading.Lock] = {}
        self._finished: Dict[str, str] = {}  # run id -> stop reason, newest last
        self.secret_values: set = set()  # masked in tool results, results, events and logs
        self.profile_secrets: Dict[Path, Dict[str, str]] = {}  # profile home -> its provider keys
        self.tool_specs: Dict[str, Dict[str, ToolSpec]] = {}
        self._tools_tried = 0.0  # last retry of unavailable tools
        self.tool_runner = ToolRunner(
            client,
            inventory.tool_result_max_chars,
            inventory.tool_concurrency_per_worker,
            secrets=self.secrets,
            ask=self.ask_operator,
        )
        self._run_slots = threading.BoundedSemaphore(inventory.max_concurrent_runs)
        self._waiting = 0
        self._stdout = None  # the process's stdout while Hermes' console file replaces it

    # ------------------------------------------------------------------ start

    def max_turns(self, definition: AgentDefinition) -> int:
        return int((definition.hermes.get("agent") or {}).get("max_turns") or self.inventory.max_turns)

    def start(self) -> None:
        """Prepare the instance root, import Hermes, start the gateway."""
        global HOST
        loaded = [name for name in FREEZING_MODULES if name in sys.modules]
        if loaded:
            raise RuntimeError(
                f"Hermes modules {loaded} were imported before the hermes worker set HERMES_HOME; "
                "do not import Hermes in the NorFab parent process"
            )
        self.root.mkdir(parents=True, exist_ok=True)
        os.environ["HERMES_HOME"] = str(self.root)
        ceiling = max([self.max_turns(d) for d in self.agents.values()] + [self.inventory.max_turns])
        # one more than any agent's budget: the host stops runs at their own budget first
        profiles.write_config(self.root / "config.yaml", profiles.root_config(ceiling + 1))
        # Hermes loads the root .env over the process environment at import;
        # the root holds no secrets, so it stays empty
        profiles.write_file(self.root / ".env", "", mode=0o600)
        environ = dict(os.environ)

        from . import compat, log_split, plugin

        log_split.split_logs(self.root, self.secrets)
        # Hermes prints spinners and status lines to stdout; in a worker that
        # shares the operator's terminal (nfcli local mode) they would
        # garble the shell, so they go to a file of the instance root
        self._stdout = sys.stdout
        sys.stdout = log_split.ScrubbingConsole(self.root / "logs" / "console.log", self.secrets)
        compat.import_hermes()
        for name, value in environ.items():
            if os.environ.get(name) != value:
                os.environ[name] = value
        compat.serve_profile_secrets(lambda home: self.profile_secrets.get(home.resolve(), {}))
        tls_problem = compat.check_ca_bundle_once()
        if tls_problem:
            self.warnings.append(f"TLS CA bundle: {tls_problem}")
        self._sync_profiles()
        self.tool_specs = norfab_tools.build_specs(self.client, self.agents)
        plugin.install_tools(self.tool_specs)
        HOST = self
        self._thread = threading.Thread(target=self._serve, name="hermes-gateway-loop", daemon=True)
        self._thread.start()
        if not self._started.wait(START_TIMEOUT):
            raise RuntimeError(f"Hermes gateway did not start within {START_TIMEOUT:.0f}s")
        if self._start_error:
            raise RuntimeError(f"Hermes gateway failed to start: {self._start_error}")
        for name in self.agents:
            if compat.profile_adapter(self.runner, name) is None:
                self.errors.setdefault(name, f"agent '{name}': Hermes did not start its NorFab adapter")
        log.info(f"{self.worker_name} - Hermes gateway serving agents {sorted(self.available())}")

    def _sync_profiles(self) -> None:
        for name, definition in list(self.agents.items()):
            home = profiles.ensure_profile(name)
            try:
                config, secrets = profiles.profile_config(
                    name, definition, self.inventory.model, self.max_turns(definition), os.environ
                )
            except ValueError as error:
                self.errors[name] = f"agent '{name}': {error}"
                del self.agents[name]
                profiles.disable_profile(home)
                continue
            profiles.write_profile(home, config, definition.instructions)
            self.profile_secrets[home.resolve()] = secrets
            self.secret_values.update(value for value in secrets.values() if len(value) >= 6)
        for name in profiles.served_profiles(self.root):
            if name not in self.agents:
                profiles.disable_profile(self.root / "profiles" / name)
        for name, definition in self.agents.items():
            if definition.tools and profiles.NORFAB_TOOLSET not in definition.toolsets:
                self.warnings.append(
                    f"agent '{name}' defines tools but its toolsets do not list '{profiles.NORFAB_TOOLSET}': "
                    "the tools are not offered"
                )

    def _serve(self) -> None:
        from gateway.config import load_gateway_config

        from . import compat

        self.loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self.loop)
        try:
            self.runner = compat.make_runner(load_gateway_config())
            compat.size_turn_pool(self.runner, self.inventory.max_concurrent_runs)
            cut = compat.settle_cut_turns(self.runner, self.root, self._read_in_flight(), CUT_BY_RESTART)
            if cut:
                log.warning(f"{self.worker_name} - Turns cut by the last shutdown, recorded and not resumed: sessions {cut}")
            self._write_in_flight()
            self.loop.run_until_complete(self.runner.start())
        except Exception as error:
            log.exception(f"{self.worker_name} - Hermes gateway failed to start")
            self._start_error = repr(error)
            self._started.set()
            self.loop.close()
            return
        self._started.set()
        self.loop.run_forever()
        self.loop.run_until_complete(self.loop.shutdown_default_executor())
        self.loop.close()

    # ------------------------------------------------------------------- stop

    def stop(self) -> None:
        """Interrupt every run, stop the gateway and its loop; safe to call twice."""
        global HOST
        if self.stopping.is_set():
            return
        self.stopping.set()
        with self._registry_lock:
            runs = list(self._runs.values())
        for run in runs:
            run.stop(StopReason.interrupted.value, "worker shutting down")
        deadline = time.time() + GRACE
        while self._runs and time.time() < deadline:
            time.sleep(POLL)
        if self.loop and self.runner and self.loop.is_running():
            try:
                asyncio.run_coroutine_threadsafe(self.runner.stop(), self.loop).result(STOP_TIMEOUT)
            except Exception as error:
                log.error(f"{self.worker_name} - Hermes gateway stop failed: {error!r}")
            self.loop.call_soon_threadsafe(self.loop.stop)
        if self._thread:
            self._thread.join(STOP_TIMEOUT)
        if self._stdout is not None:
            sys.stdout = self._stdout
        HOST = None
        log.info(f"{self.worker_name} - Hermes gateway stopped")

    # ---------------------------------------------------------------- queries

    def effective_config(self, agent: str) -> Dict[str, Any]:
        """The config.yaml Hermes reads for the agent's profile."""
        path = self.root / "profiles" / agent / "config.yaml"
        return (yaml.safe_load(path.read_text()) or {}) if path.exists() else {}

    def available(self) -> List[str]:
        return [name for name in self.agents if name not in self.errors]

    def require(self, agent: str) -> AgentDefinition:
        if agent in self.errors:
            raise AgentUnavailable(f"agent '{agent}' on worker '{self.worker_name}' is unavailable: {self.errors[agent]}")
        if agent not in self.agents:
            known = ", ".join(sorted(self.available())) or "none"
            raise AgentUnavailable(f"agent '{agent}' not found on worker '{self.worker_name}'; known agents: {known}")
        if self.stopping.is_set():
            raise AgentUnavailable(f"worker '{self.worker_name}' is shutting down")
        return self.agents[agent]

    def secrets(self) -> List[str]:
        """Secret values to mask, longest first so no shorter one splits a longer."""
        return sorted(self.secret_values, key=len, reverse=True)

    def availability(self) -> Dict[str, bool]:
        """Every agent of the inventory, valid or not, and whether it takes runs now."""
        up = not self.stopping.is_set()
        return {name: up and name in self.agents and name not in self.errors for name in sorted({*self.agents, *self.errors})}

    def refresh_tools(self) -> None:
        """Retry tools whose NorFab task could not be read (e.g. its service started later).

        At most every TOOL_RETRY_INTERVAL: listing an absent service's tasks
        waits for a timeout, and runs should not each pay it.
        """
        if time.time() - self._tools_tried < TOOL_RETRY_INTERVAL:
            return
        self._tools_tried = time.time()
        broken = [spec for tools in self.tool_specs.values() for spec in tools.values() if spec.error]
        if not broken:
            return
        norfab_tools.refresh(self.client, broken)
        if not any(spec.error for spec in broken):
            from . import plugin

            plugin.install_tools(self.tool_specs)

    def tool_errors(self) -> List[str]:
        return [
            f"agent '{agent}' tool '{name}': {spec.error}"
            for agent, tools in self.tool_specs.items()
            for name, spec in tools.items()
            if spec.error
        ]

    def active_runs(self) -> List[ActiveRun]:
        with self._registry_lock:
            return [run.summary() for run in self._runs.values()]

    def run_for_session_key(self, session_key: Optional[str]) -> Optional[Run]:
        return self._runs_by_key.get(session_key) if session_key else None

    # ----------------------------------------------------------------- invoke

    def invoke(
        self,
        agent: str,
        instructions: str,
        session_id: Optional[str],
        timeout: Optional[float],
        job: Any,
        interactive: bool = False,
    ) -> InvokeResultData:
        definition = self.require(agent)
        self.refresh_tools()
        if instructions.lstrip().startswith("/"):
            raise ValueError(
                f"instructions '{instructions.split()[0]}' look like a slash command: use the command task for commands"
            )
        budget = min(timeout or definition.run_timeout, definition.run_timeout)
        job_timeout = getattr(job, "timeout", None)
        if job_timeout:
            # the run must end before the caller stops waiting for the job
            budget = min(budget, max(1.0, job_timeout - JOB_TIMEOUT_MARGIN))
        chat_id = self._chat_for(agent, session_id)
        key = self._session_key(agent, chat_id)
        run = Run(agent, chat_id, key, budget, self.max_turns(definition), job, interactive)
        run.session_id = session_id
        with self._run_slot(run), self._chat_lock(run):
            with self._registered(run):
                run.event(
                    f"run {run.run_id} started on agent '{agent}'",
                    extras={
                        "run_id": run.run_id,
                        "agent": agent,
                        "session_id": session_id,
                        "worker": self.worker_name,
                        "job_uuid": run.job_uuid,
                    },
                )
                turn = self._wait_turn(run, instructions)
                result = self._result(run, turn)
                if result.stop_reason != StopReason.completed.value and turn is not None:
                    from . import compat

                    note = f"[This turn ended without an answer ({result.stop_reason}: {run.stop_message or 'see the run warnings'}).]"
                    compat.close_unanswered_turn(self.runner, result.session_id, note)
        run.event(f"run {run.run_id} {result.stop_reason}", extras={"run_id": run.run_id, "session_id": result.session_id})
        return result

    def _session_key(self, agent: str, chat_id: str) -> str:
        from .adapter import session_key

        return session_key(chat_id, agent)

    def _chat_for(self, agent: str, session_id: Optional[str]) -> str:
        """The gateway chat carrying ``session_id``, rebinding it if needed; a new chat if None."""
        if not session_id:
            return "nf-" + uuid.uuid4().hex[:16]
        row = self._owned_session(agent, session_id)
        if row.get("source") != profiles.PLATFORM or not row.get("chat_id"):
            raise UnknownSession(
                f"session '{session_id}' of agent '{agent}' was not started through NorFab and cannot be continued; "
                "start a new session"
            )
        key = self._session_key(agent, row["chat_id"])
        store = self.runner.session_store
        if store.peek_session_id(key) != session_id:
            store.switch_session(key, session_id)
        return row["chat_id"]

    def _owned_session(self, agent: str, session_id: str) -> Dict[str, Any]:
        """The session row, if ``session_id`` is one of ``agent``'s sessions."""
        from . import compat

        row = compat.session_db(self.runner).get_session(session_id)
        if not row or (row.get("profile_name") or "default") != agent:
            raise UnknownSession(f"session '{session_id}' not found for agent '{agent}' on worker '{self.worker_name}'")
        return row

    @contextlib.contextmanager
    def _run_slot(self, run: Run) -> Iterator[None]:
        with self._registry_lock:
            if self._waiting >= self.inventory.max_concurrent_runs:
                raise Busy(
                    f"worker '{self.worker_name}' is running {self.inventory.max_concurrent_runs} runs "
                    f"with as many queued; retry later or use another worker"
                )
            self._waiting += 1
        try:
            acquired = self._run_slots.acquire(timeout=run.remaining())
        finally:
            with self._registry_lock:
                self._waiting -= 1
        if not acquired:
            raise Busy(f"no run slot became free on worker '{self.worker_name}' within the run's budget")
        try:
            yield
        finally:
            self._run_slots.release()

    @contextlib.contextmanager
    def _chat_lock(self, run: Run) -> Iterator[None]:
        """Turns of one session run one at a time, in arrival order of the lock."""
        with self._registry_lock:
            lock = self._chat_locks.setdefault(run.session_key, threading.Lock())
        if not lock.acquire(timeout=run.remaining()):
            raise Busy(f"session of agent '{run.agent}' stayed busy for the whole run budget")
        try:
            yield
        finally:
            lock.release()

    @contextlib.contextmanager
    def _registered(self, run: Run) -> Iterator[None]:
        with self._registry_lock:
            self._runs[run.run_id] = run
            self._runs_by_key[run.session_key] = run
            self._write_in_flight()
        self.runner.turn_results.pop(run.session_key, None)
        try:
            yield
        finally:
            with self._registry_lock:
                self._runs.pop(run.run_id, None)
                self._runs_by_key.pop(run.session_key, None)
                self._write_in_flight()
                self._finished[run.run_id] = run.stop_reason or StopReason.failed.value
                while len(self._finished) > FINISHED_RUNS_KEPT:
                    del self._finished[next(iter(self._finished))]

    # Session keys of the runs in flight, on disk: after a crash the host
    # knows which turns were cut (see compat.settle_cut_turns).

    def _read_in_flight(self) -> List[str]:
        path = self.root / IN_FLIGHT_FILE
        try:
            return json.loads(path.read_text()) if path.exists() else []
        except ValueError:
            return []

    def _write_in_flight(self) -> None:
        profiles.write_file(self.root / IN_FLIGHT_FILE, json.dumps(sorted(self._runs_by_key)))

    async def _turn(self, agent: str, text: str, chat_id: str) -> Any:
        from . import compat

        adapter = compat.profile_adapter(self.runner, agent)
        turn = await adapter.submit(text, chat_id, agent)
        return await turn.done

    def _wait_turn(self, run: Run, text: str) -> Any:
        """Wait for the gateway turn, enforcing the run's budgets and interrupts."""
        from . import compat

        future = asyncio.run_coroutine_threadsafe(self._turn(run.agent, text, run.chat_id), self.loop)
        interrupted_at = None
        while True:
            try:
                return future.result(POLL)
            except concurrent.futures.TimeoutError:
                pass
            if time.time() > run.deadline:
                run.stop(StopReason.run_timeout.value, f"run budget of {run.deadline - run.started:.0f}s spent")
            if self.stopping.is_set():
                run.stop(StopReason.interrupted.value, "worker shutting down")
            if run.stop_reason is None:
                continue
            agent = compat.running_agent(self.runner, run.session_key)
            if interrupted_at is None and agent is not None:
                # no message: the gateway would run an interrupt message as a follow-up turn
                agent.interrupt()
                interrupted_at = time.time()
                run.event(f"run {run.run_id} stopping: {run.stop_message}", severity="WARNING")
            if time.time() - (interrupted_at or run.deadline) > GRACE:
                future.cancel()
                run.warnings.append(f"turn did not stop within {GRACE:.0f}s of '{run.stop_message}'; abandoned")
                return None

    def _provider_warning(self, run: Run, raw: Dict[str, Any]) -> str:
        """What the provider answered and how often Hermes retried, secrets masked."""
        failures = run.provider_errors
        if not failures:
            return f"model provider error: {scrub(str(raw['error']), self.secrets())}"
        last = failures[-1]
        status = f"HTTP {last['status_code']}" if last.get("status_code") else "no HTTP status"
        retries = len(failures) - 1
        outcome = "the run stopped" if raw.get("error") else "a later attempt succeeded"
        return scrub(
            f"model provider error: {status} ({last.get('reason') or 'unknown'}): {last.get('message')}; "
            f"{len(failures)} failed request(s), {retries} retr{'y' if retries == 1 else 'ies'}; {outcome}",
            self.secrets(),
        )

    def _result(self, run: Run, turn: Any) -> InvokeResultData:
        raw = self.runner.turn_results.pop(run.session_key, None) or {}
        run.stop_reason = run.stop_reason or stop_reason(raw)
        if raw.get("error") or run.provider_errors:
            # the gateway keeps provider details out of the reply; the operator needs them
            run.warnings.append(self._provider_warning(run, raw))
        session_id = raw.get("session_id") or self.runner.session_store.peek_session_id(run.session_key)
        response = (turn.reply if turn is not None else "") or raw.get("final_response") or ""
        cost = raw.get("estimated_cost_usd") if raw.get("cost_status") not in (None, "unknown") else None
        return InvokeResultData(
            response=response,
            run_id=run.run_id,
            session_id=session_id,
            agent=run.agent,
            worker=self.worker_name,
            stop_reason=run.stop_reason,
            tool_calls=run.tool_calls,
            usage=RunUsage(
                api_calls=raw.get("api_calls") or run.api_calls,
                input_tokens=raw.get("input_tokens") or 0,
                output_tokens=raw.get("output_tokens") or 0,
                total_tokens=raw.get("total_tokens")
                or (raw.get("input_tokens") or 0) + (raw.get("output_tokens") or 0),
                cost_usd=cost,
            ),
            warnings=run.warnings,
        )

    # -------------------------------------------------------------- sessions

    def get_sessions(self, agent: str, limit: int) -> List[SessionSummary]:
        """The agent's sessions, newest activity first (all profiles share one state.db)."""
        from . import compat

        self.require(agent)
        db = compat.session_db(self.runner)
        found: List[SessionSummary] = []
        offset, page = 0, 200
        while len(found) < limit:
            rows = db.list_sessions_rich(limit=page, offset=offset, order_by_last_active=True, compact_rows=True)
            found += [_session_summary(r) for r in rows if (r.get("profile_name") or "default") == agent]
            if len(rows) < page:
                break
            offset += page
        return found[:limit]

    def get_session(self, agent: str, session_id: str, limit: int) -> SessionDetails:
        from . import compat

        self.require(agent)
        row = self._owned_session(agent, session_id)
        # session_meta rows are Hermes bookkeeping, not conversation
        messages = [m for m in compat.session_db(self.runner).get_messages(session_id) if m.get("role") != "session_meta"]
        return SessionDetails(
            **_session_summary(row).model_dump(),
            agent=agent,
            worker=self.worker_name,
            messages=[_session_message(m) for m in messages[-limit:]],
        )

    # -------------------------------------------------------------- commands

    def command(self, agent: str, command: str, session_id: Optional[str]) -> CommandResultData:
        """Run a supported native slash command through the agent's gateway chat."""
        self.require(agent)
        text = " ".join(command.split())
        name, _, arguments = text.lstrip("/").partition(" ")
        supported = ", ".join(f"/{c}" for c in SUPPORTED_COMMANDS)
        if not text.startswith("/") or name not in SUPPORTED_COMMANDS:
            raise ValueError(f"'{text.split(' ')[0]}' is not a supported command; supported: {supported}")
        if arguments not in COMMAND_ARGUMENTS.get(name, (arguments,)):
            allowed = " or ".join(f"'/{name} {a}'".replace(" '", "'") for a in COMMAND_ARGUMENTS[name])
            raise ValueError(f"'/{name} {arguments}' is not supported through NorFab; use {allowed}")
        chat_id = self._chat_for(agent, session_id)
        future = asyncio.run_coroutine_threadsafe(self._turn(agent, text, chat_id), self.loop)
        try:
            turn = future.result(COMMAND_TIMEOUT)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise Busy(f"'{text}' got no answer from agent '{agent}' within {COMMAND_TIMEOUT:.0f}s") from None
        return CommandResultData(
            command=text,
            response=turn.reply or "\n".join(s["content"] for s in turn.sends),
            agent=agent,
            worker=self.worker_name,
            session_id=self.runner.session_store.peek_session_id(self._session_key(agent, chat_id)),
        )

    # ------------------------------------------------------------- interrupt

    def interrupt(self, agent: str, run_id: str) -> InterruptResultData:
        with self._registry_lock:
            run = self._runs.get(run_id)
            finished = self._finished.get(run_id)
        if run is None:
            if finished:
                raise UnknownRun(f"run '{run_id}' on worker '{self.worker_name}' already finished: {finished}")
            raise UnknownRun(f"run '{run_id}' is not running on worker '{self.worker_name}'")
        if run.agent != agent:
            raise UnknownRun(f"run '{run_id}' belongs to agent '{run.agent}', not '{agent}'")
        run.stop(StopReason.interrupted.value, "interrupted by the operator")
        return InterruptResultData(run_id=run_id, agent=agent, worker=self.worker_name, interrupted=True)

    def ask_operator(self, session_key: str, question: str, default: Any) -> Any:
        """Ask the caller of the run for ``session_key`` through NorFab's input request.

        Raises ``PermissionError`` with the reason when nobody can answer:
        the run is not interactive, the operator did not answer in time or
        cancelled.
        """
        run = self.run_for_session_key(session_key)
        if run is None or not run.interactive:
            raise PermissionError("this run is not interactive, so the operator cannot be asked")
        wait = int(min(ASK_TIMEOUT, run.remaining()))
        if wait < 1:
            raise PermissionError("the run has no time left to wait for the operator")
        run.event("waiting for the operator's answer", severity="WARNING")
        try:
            return run.job.request_input(question=question, default=default, timeout=wait, metadata={"run_id": run.run_id})
        except TimeoutError:
            raise PermissionError(f"the operator did not answer within {wait}s") from None
        except RuntimeError:
            raise PermissionError("the operator cancelled the question") from None

    # ------------------------------------------------- hooks from the plugin

    def on_model_request(self, run: Run, api_call_count: int) -> None:
        from . import compat

        agent = compat.running_agent(self.runner, run.session_key)
        if agent is not None:
            compat.tune(agent)
        run.api_calls = max(run.api_calls + 1, api_call_count or 0)
        if run.api_calls > run.max_turns:
            run.stop(StopReason.max_turns.value, f"model call budget of {run.max_turns} spent")
            return
        run.event(f"model request {run.api_calls} started")


def _iso(timestamp: Any) -> Optional[str]:
    return datetime.fromtimestamp(float(timestamp), timezone.utc).isoformat() if timestamp else None


def _session_summary(row: Dict[str, Any]) -> SessionSummary:
    return SessionSummary(
        session_id=row["id"],
        title=row.get("title"),
        source=row.get("source"),
        started=_iso(row.get("started_at")),
        last_active=_iso(row.get("last_active") or row.get("ended_at") or row.get("started_at")),
        message_count=row.get("message_count") or 0,
        preview=row.get("preview"),
    )


def _session_message(row: Dict[str, Any]) -> SessionMessage:
    calls = row.get("tool_calls") or []
    if isinstance(calls, str):
        calls = json.loads(calls or "[]")
    return SessionMessage(
        role=row.get("role") or "unknown",
        content=row.get("content") if isinstance(row.get("content"), str) else json.dumps(row.get("content")),
        tool_calls=[
            {"name": (c.get("function") or {}).get("name"), "arguments": (c.get("function") or {}).get("arguments")}
            for c in calls
        ],
        tool_name=row.get("tool_name"),
        timestamp=_iso(row.get("timestamp")),
    )


def stop_reason(raw: Dict[str, Any]) -> str:
    """Map a Hermes turn result onto the closed set of stop reasons."""
    exit_reason = str(raw.get("turn_exit_reason") or "")
    if raw.get("interrupted"):
        return StopReason.interrupted.value
    if exit_reason.startswith("max_iterations"):
        return StopReason.max_turns.value
    if raw.get("error"):  # Hermes returns early with the API error after its retries
        return StopReason.provider_error.value
    if raw.get("failed") or not raw or raw.get("completed") is False:
        return StopReason.failed.value
    return StopReason.completed.value
