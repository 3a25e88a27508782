"""
Runs of one worker: each invoke in flight with its budgets, the run slots,
one turn at a time per session, the runs that just finished, interrupts, and
the operator questions a run may ask its caller.

The session keys of runs in flight are also kept on disk, so that after a
crash the host knows which turns were cut (``compat.settle_cut_turns``).
"""

import contextlib
import json
import logging
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Set

from ..errors import Busy, UnknownRun
from ..models import ActiveRun, InterruptResultData, StopReason, ToolCallSummary
from . import profiles

log = logging.getLogger(__name__)

FINISHED_RUNS_KEPT = 200
ASK_TIMEOUT = 300.0  # longest wait for an operator's answer, within the run budget
IN_FLIGHT_FILE = "norfab_runs_in_flight.json"


@dataclass(frozen=True)
class ToolBudget:
    """What one run may do through NorFab tools."""

    max_calls: int
    max_targets: int  # distinct devices touched through nornir tools
    max_repeats: int  # the same call with the same arguments


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
        tool_budget: ToolBudget = ToolBudget(30, 20, 3),
    ) -> None:
        self.run_id = uuid.uuid4().hex[:12]
        self.agent = agent
        self.chat_id = chat_id
        self.session_key = session_key
        self.session_id: Optional[str] = None
        self.schedule_id: Optional[str] = None  # the schedule that started the run
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
        self.tool_budget = tool_budget
        self._calls: Counter = Counter()  # (tool, arguments digest) -> times called
        self.targets: Set[str] = set()

    def event(self, message: str, **kwargs: Any) -> None:
        if self.job is None:  # a scheduled run: its history is the record
            return
        try:
            self.job.event(message, **kwargs)
        except Exception as error:  # events are best effort, never fail a run
            log.debug(f"Run {self.run_id} event failed: {error}")

    def stop(self, reason: str, message: str) -> None:
        """Ask the run to end; the first reason given is the one it ends with."""
        if self.stop_reason is None:
            self.stop_reason, self.stop_message = reason, message

    def remaining(self) -> float:
        return max(0.0, self.deadline - time.time())

    def record_tool_call(self, summary: ToolCallSummary) -> None:
        self.tool_calls.append(summary)

    def admit_tool_call(self, tool: str, digest: str) -> Optional[str]:
        """Count a NorFab tool call; why it must not be made when it breaks the run's budget.

        A refused call stops the run: a model that loops or fans out keeps
        doing so, and every further call would reach the network.
        """
        if self.stop_reason is not None:
            return f"the run is stopping ({self.stop_message})"
        self._calls[(tool, digest)] += 1
        repeats, calls = self._calls[(tool, digest)], sum(self._calls.values())
        if repeats >= self.tool_budget.max_repeats:
            return self._over_budget(
                StopReason.repeated_call,
                f"{tool} was called {repeats} times with the same arguments; the run stops instead of looping",
            )
        if calls > self.tool_budget.max_calls:
            return self._over_budget(
                StopReason.tool_budget, f"the run's budget of {self.tool_budget.max_calls} tool calls is spent"
            )
        return None

    def touched(self, devices: Set[str]) -> None:
        """Devices a tool call reached; past the budget the run stops."""
        self.targets |= devices
        if len(self.targets) > self.tool_budget.max_targets:
            self._over_budget(
                StopReason.tool_budget,
                f"the run touched {len(self.targets)} devices, over its budget of {self.tool_budget.max_targets}",
            )

    def _over_budget(self, reason: StopReason, message: str) -> str:
        if self.stop_reason is None:
            self.warnings.append(message)
            self.event(f"run {self.run_id} stopping: {message}", severity="WARNING")
        self.stop(reason.value, message)
        return message

    def summary(self) -> ActiveRun:
        return ActiveRun(
            run_id=self.run_id,
            job_uuid=self.job_uuid,
            agent=self.agent,
            session_id=self.session_id,
            started=datetime.fromtimestamp(self.started, timezone.utc).isoformat(),
            schedule_id=self.schedule_id,
        )


class RunRegistry:
    """
    The runs of one worker.

    Args:
        worker_name: for messages.
        root: the instance root, where the in-flight ledger is kept.
        max_concurrent_runs: runs executing at once; as many more may queue.
    """

    def __init__(self, worker_name: str, root: Path, max_concurrent_runs: int) -> None:
        self.worker_name = worker_name
        self.ledger = Path(root) / IN_FLIGHT_FILE
        self.max_concurrent_runs = max_concurrent_runs
        self._runs: Dict[str, Run] = {}
        self._by_key: Dict[str, Run] = {}
        self._finished: Dict[str, str] = {}  # run id -> stop reason, newest last
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(max_concurrent_runs)
        self._waiting = 0
        self._chats: Dict[str, List[Any]] = {}  # session key -> [lock, holders and waiters]

    # ------------------------------------------------------------- admission

    @contextlib.contextmanager
    def slot(self, run: Run) -> Iterator[None]:
        """A run slot, waited for within the run's budget; Busy when the queue is full too."""
        with self._lock:
            if self._waiting >= self.max_concurrent_runs:
                raise Busy(
                    f"worker '{self.worker_name}' is running {self.max_concurrent_runs} runs "
                    f"with as many queued; retry later or use another worker"
                )
            self._waiting += 1
        try:
            acquired = self._slots.acquire(timeout=run.remaining())
        finally:
            with self._lock:
                self._waiting -= 1
        if not acquired:
            raise Busy(f"no run slot became free on worker '{self.worker_name}' within the run's budget")
        try:
            yield
        finally:
            self._slots.release()

    @contextlib.contextmanager
    def chat_turn(self, run: Run) -> Iterator[None]:
        """Turns of one session run one at a time, in arrival order of the lock.

        A session's lock lives only while some run holds or waits for it.
        """
        with self._lock:
            entry = self._chats.setdefault(run.session_key, [threading.Lock(), 0])
            entry[1] += 1
        try:
            if not entry[0].acquire(timeout=run.remaining()):
                raise Busy(f"session of agent '{run.agent}' stayed busy for the whole run budget")
            try:
                yield
            finally:
                entry[0].release()
        finally:
            with self._lock:
                entry[1] -= 1
                if not entry[1]:
                    del self._chats[run.session_key]

    @contextlib.contextmanager
    def registered(self, run: Run) -> Iterator[None]:
        """The run is findable (interrupt, hooks, status) and in the on-disk ledger while inside."""
        with self._lock:
            self._runs[run.run_id] = run
            self._by_key[run.session_key] = run
            self._write_ledger()
        try:
            yield
        finally:
            with self._lock:
                self._runs.pop(run.run_id, None)
                self._by_key.pop(run.session_key, None)
                self._write_ledger()
                self._finished[run.run_id] = run.stop_reason or StopReason.failed.value
                while len(self._finished) > FINISHED_RUNS_KEPT:
                    del self._finished[next(iter(self._finished))]

    # ---------------------------------------------------------------- ledger

    def cut_by_last_stop(self) -> List[str]:
        """Session keys of the runs that were in flight when the worker last went down."""
        try:
            return json.loads(self.ledger.read_text()) if self.ledger.exists() else []
        except ValueError:
            return []

    def _write_ledger(self) -> None:
        profiles.write_file(self.ledger, json.dumps(sorted(self._by_key)))

    def reset_ledger(self) -> None:
        with self._lock:
            self._write_ledger()

    # --------------------------------------------------------------- queries

    def for_session_key(self, session_key: Optional[str]) -> Optional[Run]:
        return self._by_key.get(session_key) if session_key else None

    def active(self) -> List[ActiveRun]:
        with self._lock:
            return [run.summary() for run in self._runs.values()]

    def has_runs(self) -> bool:
        return bool(self._runs)

    # --------------------------------------------------------------- control

    def interrupt(self, agent: str, run_id: str) -> InterruptResultData:
        with self._lock:
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

    def stop_agent(self, agent: str, message: str) -> None:
        """Ask every run of one agent to stop."""
        with self._lock:
            runs = [run for run in self._runs.values() if run.agent == agent]
        for run in runs:
            run.stop(StopReason.interrupted.value, message)

    def stop_all(self, message: str, grace: float, poll: float) -> None:
        """Stop every run and wait up to ``grace`` seconds for them to end."""
        with self._lock:
            runs = list(self._runs.values())
        for run in runs:
            run.stop(StopReason.interrupted.value, message)
        deadline = time.time() + grace
        while self._runs and time.time() < deadline:
            time.sleep(poll)

    def on_model_request(self, run: Run, api_call_count: int) -> bool:
        """Count a model request; False (and the run stopping) once its budget is spent."""
        run.api_calls = max(run.api_calls + 1, api_call_count or 0)
        if run.api_calls > run.max_turns:
            run.stop(StopReason.max_turns.value, f"model call budget of {run.max_turns} spent")
            return False
        run.event(f"model request {run.api_calls} started")
        return True

    def ask_operator(self, session_key: str, question: str, default: Any) -> Any:
        """Ask the caller of the run for ``session_key`` through NorFab's input request.

        Raises ``PermissionError`` with the reason when nobody can answer:
        the run is not interactive, the operator did not answer in time or
        cancelled.
        """
        run = self.for_session_key(session_key)
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
