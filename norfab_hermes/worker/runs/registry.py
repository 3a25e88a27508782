"""
The runs of one worker: the run slots, one turn at a time per session, runs
queued, running and recently finished, interrupts, and the operator
questions a run may ask its live caller.

The session keys of runs in flight are also kept on disk, so that after a
crash the host knows which turns were cut (``compat.settle_cut_turns``).
Every run is recorded as it goes (``recording``); a run no longer in memory
is answered from its record.
"""

import contextlib
import json
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional

from ...errors import RUN_FINISHED, Busy, UnknownRun
from ...models import (
    ActiveRun,
    GetRunsInput,
    InterruptResultData,
    InvokeResultData,
    RunsPage,
    RunStateData,
    StopReason,
)
from ..files import write_file
from .recording import RunRecorder
from .run import Run

FINISHED_RUNS_KEPT = 200  # finished runs kept in memory (older ones are read from the records) ...
FINISHED_RUN_SECONDS = 24 * 3600  # ... for at most this long
ASK_TIMEOUT = 300.0  # longest wait for an operator's answer, within the run budget
IN_FLIGHT_FILE = "norfab_runs_in_flight.json"
WAIT_STEP = 0.2  # seconds between checks of a queued run for an interrupt


class RunRegistry:
    """
    The runs of one worker.

    Args:
        worker_name: for messages.
        root: the instance root, where the in-flight ledger is kept.
        max_concurrent_runs: runs executing at once; as many more may queue.
        recorder: where runs are recorded as they go.
    """

    def __init__(
        self, worker_name: str, root: Path, max_concurrent_runs: int, recorder: Optional[RunRecorder] = None
    ) -> None:
        self.worker_name = worker_name
        self.recorder = recorder
        self.ledger = Path(root) / IN_FLIGHT_FILE
        self.max_concurrent_runs = max_concurrent_runs
        self._runs: Dict[str, Run] = {}  # accepted and not finished: queued or executing
        self._by_key: Dict[str, Run] = {}  # executing, by gateway session key (hooks find them here)
        self._finished: "OrderedDict[str, Run]" = OrderedDict()  # newest last
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(max_concurrent_runs)
        self._waiting = 0
        self.freed: Callable[[], None] = lambda: None  # told when a run slot is given back (scheduled admission)
        self._chats: Dict[str, List[Any]] = {}  # session key -> [lock, holders and waiters]

    # ------------------------------------------------------------- admission

    def track(self, run: Run) -> None:
        """An accepted run: get_run, get_status and interrupt find it from now on."""
        with self._lock:
            self._runs[run.run_id] = run
        if self.recorder is not None:
            run.log = self.recorder
            try:
                self.recorder.started(run)
            except Exception:  # refused: the run needs a record that cannot be written
                with self._lock:
                    self._runs.pop(run.run_id, None)
                raise

    def finish(self, run: Run, result: Optional[InvokeResultData]) -> None:
        """The run ended (or never started): recorded, and kept in memory for a while."""
        self._finish(run, result)
        if self.recorder is not None:
            self.recorder.ended(run)

    def _finish(self, run: Run, result: Optional[InvokeResultData]) -> None:
        with self._lock:
            run.result, run.finished = result, time.time()
            run.session_id = (result.session_id if result else None) or run.session_id
            run.stop_reason = run.stop_reason or (result.stop_reason if result else StopReason.failed.value)
            self._runs.pop(run.run_id, None)
            self._finished[run.run_id] = run
            while self._finished and (
                len(self._finished) > FINISHED_RUNS_KEPT
                or time.time() - (next(iter(self._finished.values())).finished or 0) > FINISHED_RUN_SECONDS
            ):
                self._finished.popitem(last=False)

    def _acquire(self, lock: Any, run: Run) -> bool:
        """Wait for a slot or lock within the run's budget; give up when the run is stopped."""
        while run.remaining() > 0 and run.stop_reason is None:
            if lock.acquire(timeout=min(WAIT_STEP, run.remaining())):
                return True
        return False

    def take_slot(self) -> bool:
        """A free run slot, taken at once, or False (a due schedule's admission; ``give_slot`` returns it)."""
        return self._slots.acquire(blocking=False)

    def give_slot(self) -> None:
        self._slots.release()
        self.freed()

    @contextlib.contextmanager
    def slot(self, run: Run) -> Iterator[None]:
        """A run slot, waited for within the run's budget; Busy when the queue is full too.

        A run admitted with a slot already taken (``run.slot_held``) uses that one; its taker gives it back.
        """
        if run.slot_held:
            yield
            return
        with self._lock:
            if self._waiting >= self.max_concurrent_runs:
                raise Busy(
                    f"worker '{self.worker_name}' is running {self.max_concurrent_runs} runs "
                    f"with as many queued; retry later or use another worker"
                )
            self._waiting += 1
        try:
            acquired = self._acquire(self._slots, run)
        finally:
            with self._lock:
                self._waiting -= 1
        if not acquired:
            raise Busy(
                f"run {run.run_id} {run.stop_message or 'got no run slot'} while waiting for a free run slot on "
                f"worker '{self.worker_name}'"
            )
        try:
            yield
        finally:
            self.give_slot()

    @contextlib.contextmanager
    def chat_turn(self, run: Run) -> Iterator[None]:
        """Turns of one session run one at a time, in arrival order of the lock.

        A session's lock lives only while some run holds or waits for it.
        """
        with self._lock:
            entry = self._chats.setdefault(run.session_key, [threading.Lock(), 0])
            entry[1] += 1
        try:
            if not self._acquire(entry[0], run):
                raise Busy(f"session of agent '{run.agent}' stayed busy while run {run.run_id} waited")
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
    def executing(self, run: Run) -> Iterator[None]:
        """The run's turn is in the gateway: hooks find it, and the on-disk ledger lists it."""
        with self._lock:
            run.executing = True
            self._by_key[run.session_key] = run
            self._write_ledger()
        if self.recorder is not None:
            self.recorder.running(run)
        try:
            yield
        finally:
            with self._lock:
                self._by_key.pop(run.session_key, None)
                self._write_ledger()

    # ---------------------------------------------------------------- ledger

    def cut_by_last_stop(self) -> List[str]:
        """Session keys of the runs that were in flight when the worker last went down."""
        try:
            return json.loads(self.ledger.read_text()) if self.ledger.exists() else []
        except ValueError:
            return []

    def _write_ledger(self) -> None:
        write_file(self.ledger, json.dumps(sorted(self._by_key)))

    def reset_ledger(self) -> None:
        with self._lock:
            self._write_ledger()

    # --------------------------------------------------------------- queries

    def for_session_key(self, session_key: Optional[str]) -> Optional[Run]:
        return self._by_key.get(session_key) if session_key else None

    def get(self, agent: str, run_id: str) -> Run:
        """A run accepted or finished recently; UnknownRun says why not."""
        with self._lock:
            run = self._runs.get(run_id) or self._finished.get(run_id)
        if run is None:
            raise UnknownRun(f"run '{run_id}' is not known on worker '{self.worker_name}'")
        if run.agent != agent:
            raise UnknownRun(f"run '{run_id}' belongs to agent '{run.agent}', not '{agent}'")
        return run

    def live(self, run_id: str) -> Optional[Run]:
        """A run still in memory, whichever its agent."""
        with self._lock:
            return self._runs.get(run_id) or self._finished.get(run_id)

    def page(self, query: GetRunsInput) -> RunsPage:
        """A page of the run records; a run in flight shows its live state (none without records)."""
        if self.recorder is None:
            return RunsPage()
        page = self.recorder.records.runs(query)
        runs = []
        for summary in page.runs:
            run = self.live(summary.run_id)
            runs.append(summary.model_copy(update={"state": run.state}) if run is not None else summary)
        return page.model_copy(update={"runs": runs})

    def state(self, agent: str, run_id: str, offset: int = 0, deduplicated: bool = False) -> RunStateData:
        """A run as get_run shows it: from memory while it is there, else from its record."""
        with self._lock:
            run = self._runs.get(run_id) or self._finished.get(run_id)
        if run is not None:
            return self.get(agent, run_id).state_data(self.worker_name, offset, deduplicated)
        stored = self.recorder.state(run_id, offset) if self.recorder is not None else None
        if stored is None:
            raise UnknownRun(f"run '{run_id}' is not known on worker '{self.worker_name}' (not in its run records)")
        if stored.agent != agent:
            raise UnknownRun(f"run '{run_id}' belongs to agent '{stored.agent}', not '{agent}'")
        return stored.model_copy(update={"deduplicated": deduplicated})

    def active(self) -> List[ActiveRun]:
        """Runs whose turn is in the gateway now (queued ones wait for a slot or their session)."""
        with self._lock:
            return [run.summary() for run in self._runs.values() if run.executing]

    def accepted(self, agent: str) -> List[str]:
        """Ids of the agent's runs that have not finished, queued ones included."""
        with self._lock:
            return [run.run_id for run in self._runs.values() if run.agent == agent]

    # --------------------------------------------------------------- control

    def interrupt(self, agent: str, run_id: str) -> InterruptResultData:
        with self._lock:
            known = run_id in self._runs or run_id in self._finished
        if not known:
            stored = self.recorder.state(run_id, 0) if self.recorder is not None else None
            if stored is not None and stored.agent == agent and stored.state == "finished":
                raise UnknownRun(
                    f"run '{run_id}' on worker '{self.worker_name}' already finished: {stored.stop_reason}",
                    RUN_FINISHED,
                )
            raise UnknownRun(f"run '{run_id}' is not running on worker '{self.worker_name}'")
        run = self.get(agent, run_id)
        if run.finished is not None:
            raise UnknownRun(
                f"run '{run_id}' on worker '{self.worker_name}' already finished: {run.stop_reason}", RUN_FINISHED
            )
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

    def ask_operator(
        self, session_key: str, question: str, default: Any, metadata: Optional[Dict[str, Any]] = None
    ) -> Any:
        """Ask the caller of the run for ``session_key`` through NorFab's input request.

        Raises ``PermissionError`` with the reason when nobody can answer:
        the run is not interactive, the operator did not answer in time or
        cancelled. ``metadata`` travels with the question (e.g. an approval's
        tool, arguments and preview, for clients that show more than text).
        """
        run = self.for_session_key(session_key)
        if run is None or not run.interactive:
            raise PermissionError("this run is not interactive, so the operator cannot be asked")
        wait = int(min(ASK_TIMEOUT, run.remaining()))
        if wait < 1:
            raise PermissionError("the run has no time left to wait for the operator")
        run.event("waiting for the operator's answer", severity="WARNING")
        try:
            return run.job.request_input(
                question=question, default=default, timeout=wait, metadata={**(metadata or {}), "run_id": run.run_id}
            )
        except TimeoutError:
            raise PermissionError(f"the operator did not answer within {wait}s") from None
        except RuntimeError:
            raise PermissionError("the operator cancelled the question") from None
