"""
Scheduled checks: every agent's native Hermes cron store, ticked by the
worker, each due job run as a real run of the agent, and a history of those
runs that needs no client.

Hermes keeps the schedules (``<profile>/cron/jobs.json``): next-run times,
grace and catch-up, pause, repeat counts, the executions ledger and output
files are its own. Its gateway ticks only the process home, once a minute;
here one thread checks every agent's store each second (a stat of its jobs
file, a read only when it changed) and ticks a store as soon as one of its
jobs is due. The run itself goes through the host (see
``hermes.cron.run_jobs_with``), so it has the agent's tools, budgets and
``run_timeout``, shows in ``get_status`` and can be interrupted.

History lives beside the store, in ``<profile>/cron/norfab_history.jsonl``:
one line per run (and per run Hermes skipped, and per run skipped because
the agent's daily budget is spent), with the finding, the session to read it
in full, the tool calls with their NorFab job UUIDs and their evidence. A
watched schedule's runs are judged against its acceptance criteria, and its
observation period ends on its own (``watch``).

Due occurrences beyond the free run slots wait in ``admission``: recorded
``queued`` at once, admitted one agent at a time in turn as slots free, each
run with its full budget from the moment it is admitted. One still waiting
when the worker stops is recorded ``skipped`` (at the stop, or at the next
start after a crash).
"""

import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

from ...errors import OverBudget
from ...models import (
    AgentSchedules,
    InvokeResultData,
    ScheduleDefinition,
    ScheduleResultData,
    SchedulerStatus,
    ScheduleRun,
    StopReason,
)
from ..agents.catalog import AgentCatalog
from ..evidence.store import EvidenceStore
from ..hermes import cron
from ..hermes.records import CronJob
from ..hermes.runtime import HermesRuntime
from . import watch
from .actions import ScheduleActions
from .admission import Admission
from .history import ScheduleHistory, Told, iso, parse_time

log = logging.getLogger(__name__)

TICK = 1.0  # longest wait between checks of the stores
MIN_WAIT = 0.02  # seconds; due times are whole seconds, the clock checks slightly late rather than spin
LATE = 10 * TICK  # a run starting this late was held up (worker down or busy), not just ticked
RESPONSE_CHARS = 2000  # of a finding kept in history; the session has all of it
MISSED_SLOTS_COUNTED = 1000
CRON_THREADS = 2048  # due jobs Hermes' cron hands over at once (see cron.size_pool): the 2,000 of issue "Scale"
TICK_THREADS = 4  # agents' stores ticked at once when several have jobs due
STOP_WAIT = 3.0  # seconds a stop waits for the queued occurrences' skipped records
STOPPED_QUEUED = "the worker stopped while it was queued for a run slot: not run"
# job fields a scheduled run refuses (a chat-created job may set them): they run code on the worker host
STATUS_BY_STOP_REASON = {
    StopReason.completed.value: "ok",
    StopReason.interrupted.value: "interrupted",
    StopReason.run_timeout.value: "timeout",
}

# run_scheduled(agent, prompt, schedule_id, response_schema) -> the run's result
RunScheduled = Callable[..., InvokeResultData]
# claim(group, agent, name, due) -> the worker that runs that occurrence of a grouped schedule
Claim = Callable[[str, str, str, str], str]


class Schedules:
    """
    The scheduled checks of one worker's agents.

    Args:
        worker_name: for messages.
        catalog: the worker's agents (whose stores are ticked).
        runtime: the Hermes runtime (gateway loop and adapters).
        run_scheduled: runs a due job as a run of its agent.
        evidence: the tool results runs received (criteria are checked on them).
        admission: the worker's run slots, shared fairly by due occurrences.
        claim: who runs a due occurrence of a grouped schedule (the records).
        told: told of every run the history records (the notifier).
    """

    def __init__(
        self,
        worker_name: str,
        catalog: AgentCatalog,
        runtime: HermesRuntime,
        run_scheduled: RunScheduled,
        evidence: EvidenceStore,
        admission: Admission,
        claim: Optional[Claim] = None,
        told: Optional[Told] = None,
    ) -> None:
        self.worker_name = worker_name
        self.claim = claim
        self.catalog = catalog
        self.runtime = runtime
        self.run_scheduled = run_scheduled
        self.last_tick: Optional[datetime] = None
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._tickers: Optional[ThreadPoolExecutor] = None  # ticks several agents' stores at once
        self._next_due: Dict[str, Tuple[float, Optional[datetime]]] = {}  # agent -> (jobs file mtime, next due)
        self.evidence = evidence
        self.admission = admission
        self.history = ScheduleHistory(worker_name, self.home, told)
        self.watches = watch.Watches(self.home)
        self.actions = ScheduleActions(
            worker_name,
            self.home,
            self.history,
            runtime,
            self.wake,
            lambda agent: agent in catalog.stopped,
            self.watches,
        )

    # ---------------------------------------------------------------- ticker

    def start(self) -> None:
        for agent in list(self.catalog.agents):  # queued when the worker went down: accounted, never silently gone
            settled = self.history.settle_queued(agent, f"{STOPPED_QUEUED} (found at the worker's next start)")
            if settled:
                log.warning(
                    f"{self.worker_name} - Recorded {settled} queued occurrence(s) of agent '{agent}' as skipped"
                )
        cron.size_pool(CRON_THREADS)
        cron.run_jobs_with(self._execute)
        self._thread = threading.Thread(target=self._loop, name="hermes-schedules", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread:
            self._thread.join(5)
        self.admission.drain(STOP_WAIT)  # queued occurrences see the stop: their skipped records land now
        if self._tickers is not None:
            self._tickers.shutdown(wait=False)

    def wake(self) -> None:
        """Check the stores now (a schedule changed)."""
        self._wake.set()

    def _loop(self) -> None:
        wait = TICK
        while not self._stop.is_set():
            self._wake.wait(wait)
            self._wake.clear()
            if self._stop.is_set():
                return
            now = datetime.now(timezone.utc)
            soonest = now + timedelta(seconds=TICK)
            due_now: List[str] = []
            for agent in self.catalog.available():
                due = self.next_due(agent)
                if due is not None and due <= now and self._end_observations(agent, now):
                    due = self.next_due(agent)
                if due is not None and due <= now:
                    due_now.append(agent)
                elif due is not None:
                    soonest = min(soonest, due)
            self._tick_all(due_now)
            self.last_tick = now
            # sleep until the next due time, at most a tick: new and changed schedules are seen within a tick
            wait = max(MIN_WAIT, (soonest - datetime.now(timezone.utc)).total_seconds())

    def _tick_all(self, agents: List[str]) -> None:
        """Tick the stores with jobs due, several at once, their occurrences handed over to the admission
        together (``Admission.hand_over``)."""
        if len(agents) == 1:
            self._tick(agents[0])
            return
        if not agents:
            return
        if self._tickers is None:
            self._tickers = ThreadPoolExecutor(TICK_THREADS, thread_name_prefix="hermes-schedules-tick")
        tickers = self._tickers
        self.admission.hand_over(lambda: sum(tickers.map(self._tick, agents)), self._stop.is_set)

    def _tick(self, agent: str) -> int:
        """Hand the agent's due jobs to Hermes' cron; how many it dispatched."""
        try:
            return cron.tick(self.home(agent), self.runtime.gateway.adapters(agent), self.runtime.loop)
        except Exception:  # one broken store must not stop the others
            log.exception(f"{self.worker_name} - Scheduler tick failed for agent '{agent}'")
            return 0

    def home(self, agent: str) -> Path:
        return self.catalog.root / "profiles" / agent

    def _end_observations(self, agent: str, now: datetime) -> bool:
        """End the agent's schedules whose observation period is over; whether any ended."""
        ended = False
        for job_id, watched in self.watches.all(agent).items():
            if watched.ended(now):
                job = cron.get(self.home(agent), job_id)
                if job is not None and job.enabled:
                    cron.end(self.home(agent), job_id, f"observation period ended at {watched.until}")
                    ended = True
        return ended

    def next_due(self, agent: str) -> Optional[datetime]:
        """When the agent's next enabled schedule is due; re-read only when its jobs file changed."""
        path = self.home(agent) / "cron" / "jobs.json"
        try:
            mtime = path.stat().st_mtime
        except FileNotFoundError:
            return None
        cached = self._next_due.get(agent)
        if cached is None or cached[0] != mtime:
            times = [parse_time(job.next_run_at) for job in cron.list_jobs(self.home(agent)) if job.enabled]
            cached = (mtime, min((t for t in times if t), default=None))
            self._next_due[agent] = cached
        return cached[1]

    # ------------------------------------------------------------- execution

    def _execute(self, job: CronJob) -> cron.CronOutcome:
        """Hermes' run_job for a due job: the agent runs it; the outcome goes to history and back to Hermes."""
        agent = cron.active_profile()
        started = datetime.now(timezone.utc)
        self.admission.arrived()
        due = parse_time(job.next_run_at)

        def not_run(status: str, label: str, message: str, **record: Any) -> "cron.CronOutcome":
            """An occurrence that ran no turn here: its history entry and what Hermes' cron is told."""
            record.setdefault("started", iso(started))
            run = ScheduleRun(schedule_id=job.id, status=status, due=iso(due), **record)
            self.history.record(agent, run)
            ran_elsewhere = label == "ELSEWHERE"
            return ran_elsewhere, f"# {job.name} ({label})\n\n{message}\n", "", None if ran_elsewhere else message

        if job.host_fields:
            error = f"schedule sets {', '.join(job.host_fields)}: hermes workers run agents only, never scripts on the worker host"
            return not_run("failed", "REFUSED", error, warnings=[error])
        watched = self.watches.get(agent, job.id)
        try:
            # a claim the shared record cannot take fails below: an occurrence nobody claimed runs nowhere
            when = iso(due) or iso(started) or ""
            owner = self.claim(watched.group, agent, job.name, when) if watched.group and self.claim else None
            if owner not in (None, self.worker_name):  # another member of the group claimed it first
                note = f"ran on worker {owner} of group {watched.group}"
                return not_run("skipped", "ELSEWHERE", note, note=note, worker=owner)
        except Exception as error:  # the claim could not be taken: the occurrence runs nowhere
            return not_run("failed", "FAILED", str(error), warnings=[str(error)])

        def queued(ahead: int) -> None:
            note = f"waiting for a free run slot, {ahead} due occurrence(s) ahead of it"
            self.history.record(agent, ScheduleRun(schedule_id=job.id, status="queued", due=iso(due), note=note))

        with self.admission.asking():  # a stop waits for the skipped record of one still queued
            if not self.admission.take(agent, queued, self._stop.is_set):
                return not_run("skipped", "SKIPPED", STOPPED_QUEUED, note=STOPPED_QUEUED, started=None)
        started = datetime.now(timezone.utc)  # the run starts when it is admitted
        try:
            late = self._record_missed(agent, job, due, started)
            return self._run(agent, job, due, started, late, not_run, watched)
        finally:
            self.admission.leave()

    def _run(
        self,
        agent: str,
        job: CronJob,
        due: Optional[datetime],
        started: datetime,
        late: Optional[str],
        not_run: Callable[..., "cron.CronOutcome"],
        watched: watch.Watch,
    ) -> cron.CronOutcome:
        """The occurrence run as a run of the agent; its history entry and what Hermes' cron is told."""
        try:
            prompt = cron.job_prompt(job) or job.prompt
            result = self.run_scheduled(agent, prompt, job.id, watched.response_schema, slot_held=True)
        except OverBudget as error:  # the agent's daily budget is spent: no model is called
            note = "skipped: the agent's daily budget is spent, the model was not called"
            return not_run("skipped", "SKIPPED", str(error), warnings=[str(error)], note=note)
        except Exception as error:  # the agent cannot run now (stopped, busy, shutting down)
            return not_run("failed", "FAILED", str(error), warnings=[str(error)])
        status = STATUS_BY_STOP_REASON.get(result.stop_reason, "failed")
        warnings = list(result.warnings)
        if status == "ok" and not result.response.strip():
            status = "failed"
            warnings.append("the agent completed without a response")
        checked = []
        if status == "ok" and watched.criteria:
            evidence = watch.evidence_of(result.artifacts, self.evidence.texts(agent, result.artifacts))
            checked = watch.judge(watched.criteria, result.response, evidence)
            status = watch.status(status, checked, watch.previous_status(self.history.runs(agent, job.id, 50)))
        if result.structured_error:
            warnings.append(f"structured answer: {result.structured_error}")
        self.history.record(
            agent,
            ScheduleRun(
                schedule_id=job.id,
                status=status,
                due=iso(due),
                started=iso(started),
                duration=round((datetime.now(timezone.utc) - started).total_seconds(), 3),
                run_id=result.run_id,
                stop_reason=result.stop_reason,
                response=result.response[:RESPONSE_CHARS],
                truncated=len(result.response) > RESPONSE_CHARS,
                silent=status == "ok" and cron.is_silent(result.response),
                session_id=result.session_id,
                tool_calls=result.tool_calls,
                warnings=warnings,
                note=late,
                criteria=checked,
                artifacts=result.artifacts,
                structured_response=result.structured_response,
                worker=self.worker_name,
            ),
        )
        succeeded = status in watch.JUDGED  # a regression is a finding, not a failed run
        failure = None if succeeded else f"{result.stop_reason}: {'; '.join(warnings) or 'see the run history'}"
        criteria = "".join(f"- {'met' if c.met else 'NOT met'}: {c.criterion} ({c.detail})\n" for c in checked)
        document = (
            f"# {job.name}\n\n**Run:** {result.run_id}\n**Session:** {result.session_id}\n**Status:** {status}\n"
            + (f"\n**Criteria:**\n{criteria}" if criteria else "")
            + f"\n{result.response}\n"
        )
        return succeeded, document, result.response if succeeded else "", failure

    def _record_missed(self, agent: str, job: CronJob, due: Optional[datetime], started: datetime) -> Optional[str]:
        """Record the slots Hermes skipped before this late run; the run's own note, if it is late.

        A recurring job found due late runs once now (a catch-up) and Hermes
        re-anchors it on the run, so the slots that fell due in between never
        run: each late run leaves one ``missed`` record saying how many.
        """
        schedule = job.schedule
        if due is None or schedule.get("kind") not in ("interval", "cron"):
            return None
        late = (started - due).total_seconds()
        if late <= LATE:
            return None
        skipped: List[str] = []
        slot = cron.next_run(schedule, due.isoformat())
        while slot and (parse_time(slot) or started) < started and len(skipped) < MISSED_SLOTS_COUNTED:
            skipped.append(slot)
            slot = cron.next_run(schedule, slot)
        if skipped:
            self.history.record(
                agent,
                ScheduleRun(
                    schedule_id=job.id,
                    status="missed",
                    due=iso(parse_time(skipped[0])),
                    note=f"{len(skipped)} run(s) due from {iso(parse_time(skipped[0]))} to {iso(parse_time(skipped[-1]))} "
                    "were skipped while the worker was down or busy",
                ),
            )
        return (
            f"caught up {late:.0f}s late"
            if late <= cron.grace_seconds(schedule)
            else f"{late:.0f}s late, past the grace period: ran once now"
        )

    # ------------------------------------------------------------ the task

    def act(
        self, agent: str, action: str, ref: Optional[str], definition: Optional[ScheduleDefinition], limit: int
    ) -> ScheduleResultData:
        """One schedule task action on the agent's store."""
        return self.actions.act(agent, action, ref, definition, limit)

    def status(self, agent: Optional[str] = None) -> SchedulerStatus:
        agents = {}
        now = datetime.now(timezone.utc)
        queued = self.admission.waiting()
        for name in [agent] if agent else self.catalog.available():
            jobs = cron.list_jobs(self.home(name)) if name in self.catalog.agents else []
            times = [(parse_time(j.next_run_at), j) for j in jobs if j.enabled]
            due = [(t, j) for t, j in times if t is not None]
            agents[name] = AgentSchedules(
                schedules=len(jobs),
                next_due=iso(min((t for t, _ in due), default=None)),
                overdue=[j.name for t, j in due if (now - t).total_seconds() > 5 * TICK],
                queued=queued.get(name, 0),
            )
        return SchedulerStatus(
            ticking=bool(self._thread and self._thread.is_alive()), last_tick=iso(self.last_tick), agents=agents
        )
