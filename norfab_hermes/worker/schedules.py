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
one line per run (and per run Hermes skipped), with the finding, the
session to read it in full and the tool calls with their NorFab job UUIDs.
"""

import logging
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

from ..errors import InvalidRequest, UnknownSchedule
from ..models import (
    AgentSchedules,
    InvokeResultData,
    ScheduleDefinition,
    ScheduleInfo,
    ScheduleResultData,
    SchedulerStatus,
    ScheduleRun,
    StopReason,
)
from . import profiles
from .agents import AgentCatalog
from .hermes import compat, cron
from .runtime import HermesRuntime

log = logging.getLogger(__name__)

TICK = 1.0  # seconds between checks of the stores
LATE = 10 * TICK  # a run starting this late was held up (worker down or busy), not just ticked
HISTORY_FILE = "norfab_history.jsonl"
HISTORY_KEPT = 200  # runs kept per schedule
RESPONSE_CHARS = 2000  # of a finding kept in history; the session has all of it
MISSED_SLOTS_COUNTED = 1000
# what the schedule task accepts; scripts and working directories run code on the worker host
REFUSED_JOB_FIELDS = ("script", "workdir", "no_agent")
STATUS_BY_STOP_REASON = {
    StopReason.completed.value: "ok",
    StopReason.interrupted.value: "interrupted",
    StopReason.run_timeout.value: "timeout",
}

# run_scheduled(agent, prompt, schedule_id) -> the run's result
RunScheduled = Callable[[str, str, str], InvokeResultData]


def iso(moment: Optional[datetime]) -> Optional[str]:
    return moment.astimezone(timezone.utc).isoformat(timespec="seconds") if moment else None


def parse_time(text: Any) -> Optional[datetime]:
    try:
        moment = datetime.fromisoformat(str(text))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


class Schedules:
    """
    The scheduled checks of one worker's agents.

    Args:
        worker_name: for messages.
        catalog: the worker's agents (whose stores are ticked).
        runtime: the Hermes runtime (gateway loop and adapters).
        run_scheduled: runs a due job as a run of its agent.
    """

    def __init__(self, worker_name: str, catalog: AgentCatalog, runtime: HermesRuntime, run_scheduled: RunScheduled) -> None:
        self.worker_name = worker_name
        self.catalog = catalog
        self.runtime = runtime
        self.run_scheduled = run_scheduled
        self.last_tick: Optional[datetime] = None
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._next_due: Dict[str, Tuple[float, Optional[datetime]]] = {}  # agent -> (jobs file mtime, next due)
        self._history_lock = threading.Lock()

    # ---------------------------------------------------------------- ticker

    def start(self) -> None:
        cron.run_jobs_with(self._execute)
        self._thread = threading.Thread(target=self._loop, name="hermes-schedules", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread:
            self._thread.join(5)

    def wake(self) -> None:
        """Check the stores now (a schedule changed)."""
        self._wake.set()

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(TICK)
            self._wake.clear()
            if self._stop.is_set():
                return
            now = datetime.now(timezone.utc)
            for agent in self.catalog.available():
                due = self.next_due(agent)
                if due is not None and due <= now:
                    try:
                        cron.tick(self.home(agent), compat.profile_adapters(self.runtime.runner, agent), self.runtime.loop)
                    except Exception:  # one broken store must not stop the others
                        log.exception(f"{self.worker_name} - Scheduler tick failed for agent '{agent}'")
            self.last_tick = now

    def home(self, agent: str) -> Path:
        return self.catalog.root / "profiles" / agent

    def next_due(self, agent: str) -> Optional[datetime]:
        """When the agent's next enabled schedule is due; re-read only when its jobs file changed."""
        path = self.home(agent) / "cron" / "jobs.json"
        try:
            mtime = path.stat().st_mtime
        except FileNotFoundError:
            return None
        cached = self._next_due.get(agent)
        if cached is None or cached[0] != mtime:
            times = [parse_time(job.get("next_run_at")) for job in cron.list_jobs(self.home(agent)) if enabled(job)]
            cached = (mtime, min((t for t in times if t), default=None))
            self._next_due[agent] = cached
        return cached[1]

    # ------------------------------------------------------------- execution

    def _execute(self, job: Dict[str, Any]) -> cron.CronOutcome:
        """Hermes' run_job for a due job: the agent runs it; the outcome goes to history and back to Hermes."""
        agent = cron.active_profile()
        started = datetime.now(timezone.utc)
        due = parse_time(job.get("next_run_at"))
        late = self._record_missed(agent, job, due, started)
        refused = [field for field in REFUSED_JOB_FIELDS if job.get(field)]
        if refused:
            error = f"schedule sets {', '.join(refused)}: hermes workers run agents only, never scripts on the worker host"
            self._record(agent, ScheduleRun(schedule_id=job["id"], status="failed", due=iso(due), started=iso(started), warnings=[error]))
            return False, f"# {job.get('name')} (REFUSED)\n\n{error}\n", "", error
        try:
            result = self.run_scheduled(agent, cron.job_prompt(job) or job.get("prompt") or "", job["id"])
        except Exception as error:  # the agent cannot run now (stopped, busy, shutting down)
            message = str(error)
            self._record(agent, ScheduleRun(schedule_id=job["id"], status="failed", due=iso(due), started=iso(started), warnings=[message]))
            return False, f"# {job.get('name')} (FAILED)\n\n{message}\n", "", message
        status = STATUS_BY_STOP_REASON.get(result.stop_reason, "failed")
        if status == "ok" and not result.response.strip():
            status = "failed"
            result.warnings.append("the agent completed without a response")
        self._record(
            agent,
            ScheduleRun(
                schedule_id=job["id"],
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
                warnings=result.warnings,
                note=late,
            ),
        )
        error = None if status == "ok" else f"{result.stop_reason}: {'; '.join(result.warnings) or 'see the run history'}"
        document = f"# {job.get('name')}\n\n**Run:** {result.run_id}\n**Session:** {result.session_id}\n\n{result.response}\n"
        return status == "ok", document, result.response if status == "ok" else "", error

    def _record_missed(self, agent: str, job: Dict[str, Any], due: Optional[datetime], started: datetime) -> Optional[str]:
        """Record the slots Hermes skipped before this late run; the run's own note, if it is late.

        A recurring job found due late runs once now (a catch-up) and Hermes
        re-anchors it on the run, so the slots that fell due in between never
        run: each late run leaves one ``missed`` record saying how many.
        """
        schedule = job.get("schedule") or {}
        if due is None or schedule.get("kind") not in ("interval", "cron"):
            return None
        late = (started - due).total_seconds()
        if late <= LATE:
            return None
        skipped: List[str] = []
        slot = cron.next_run(schedule, due.isoformat())
        while slot and parse_time(slot) < started and len(skipped) < MISSED_SLOTS_COUNTED:
            skipped.append(slot)
            slot = cron.next_run(schedule, slot)
        if skipped:
            self._record(
                agent,
                ScheduleRun(
                    schedule_id=job["id"],
                    status="missed",
                    due=iso(parse_time(skipped[0])),
                    note=f"{len(skipped)} run(s) due from {iso(parse_time(skipped[0]))} to {iso(parse_time(skipped[-1]))} "
                    "were skipped while the worker was down or busy",
                ),
            )
        return f"caught up {late:.0f}s late" if late <= cron.grace_seconds(schedule) else f"{late:.0f}s late, past the grace period: ran once now"

    # --------------------------------------------------------------- history

    def _history_file(self, agent: str) -> Path:
        return self.home(agent) / "cron" / HISTORY_FILE

    def _record(self, agent: str, run: ScheduleRun) -> None:
        path = self._history_file(agent)
        with self._history_lock:
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("a", encoding="utf-8") as history:
                history.write(run.model_dump_json() + "\n")
            runs = self._read(agent)
            same = [r for r in runs if r.schedule_id == run.schedule_id]
            if len(same) > HISTORY_KEPT:
                dropped = {id(r) for r in same[: len(same) - HISTORY_KEPT]}
                self._write(agent, [r for r in runs if id(r) not in dropped])

    def _read(self, agent: str) -> List[ScheduleRun]:
        path = self._history_file(agent)
        if not path.exists():
            return []
        runs = []
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                runs.append(ScheduleRun.model_validate_json(line))
            except ValueError:
                log.warning(f"{self.worker_name} - Skipping an unreadable line of {path}")
        return runs

    def _write(self, agent: str, runs: List[ScheduleRun]) -> None:
        profiles.write_file(self._history_file(agent), "".join(r.model_dump_json() + "\n" for r in runs))

    def history(self, agent: str, schedule_id: Optional[str], limit: int) -> List[ScheduleRun]:
        runs = [r for r in self._read(agent) if schedule_id is None or r.schedule_id == schedule_id]
        return list(reversed(runs))[:limit]

    # --------------------------------------------------------------- actions

    def act(
        self, agent: str, action: str, ref: Optional[str], definition: Optional[ScheduleDefinition], limit: int
    ) -> ScheduleResultData:
        """One schedule task action on the agent's store."""
        home = self.home(agent)

        def answer(message: str, jobs: List[Dict[str, Any]] = (), history: List[ScheduleRun] = ()) -> ScheduleResultData:
            return ScheduleResultData(
                action=action,
                agent=agent,
                worker=self.worker_name,
                schedules=[self.info(agent, job) for job in jobs],
                history=list(history),
                message=message,
            )

        if action == "list":
            jobs = cron.list_jobs(home)
            return answer(f"{len(jobs)} schedule(s)", jobs)
        if action == "create":
            job = cron.create(home, **self._new_job(agent, definition))
            self.wake()
            return answer(f"schedule '{job['name']}' created, next run {job.get('next_run_at')}", [job])
        job = self.find(agent, ref, action)
        if action == "history":
            runs = self.history(agent, job["id"], limit)
            return answer(f"{len(runs)} run(s) of schedule '{job['name']}'", [job], runs)
        if action == "update":
            updates = self._updates(agent, job, definition)
            try:
                job = cron.update(home, job["id"], updates)
            except ValueError as error:
                raise InvalidRequest(f"definition.schedule: {error}") from None
            self.wake()
            return answer(f"schedule '{job['name']}' updated: {', '.join(sorted(updates))}", [job])
        if action == "pause":
            job = cron.pause(home, job["id"], "paused through NorFab")
            return answer(f"schedule '{job['name']}' paused; a run in flight goes on", [job])
        if action == "resume":
            try:
                job = cron.resume(home, job["id"])
            except ValueError as error:
                raise InvalidRequest(f"schedule_id: {error}") from None
            self.wake()
            return answer(f"schedule '{job['name']}' resumed, next run {job.get('next_run_at')}", [job])
        if action == "run":
            if not enabled(job):
                raise InvalidRequest(f"schedule_id: schedule '{job['name']}' is paused; resume it to run it")
            job = cron.trigger(home, job["id"])
            self.wake()
            return answer(f"schedule '{job['name']}' runs now; its result will be in its history", [job])
        if action == "remove":
            cron.remove(home, job["id"])
            with self._history_lock:
                self._write(agent, [r for r in self._read(agent) if r.schedule_id != job["id"]])
            return answer(f"schedule '{job['name']}' removed with its history")
        raise InvalidRequest(f"action: '{action}' is not a schedule action")

    def find(self, agent: str, ref: Optional[str], action: str) -> Dict[str, Any]:
        if not ref:
            raise InvalidRequest(f"schedule_id: '{action}' needs the schedule's id or name (see action 'list')")
        job = cron.get(self.home(agent), ref)
        if job is None:
            raise UnknownSchedule(
                f"schedule '{ref}' not found for agent '{agent}' on worker '{self.worker_name}'; "
                "list them with action 'list'"
            )
        return job

    def _new_job(self, agent: str, definition: Optional[ScheduleDefinition]) -> Dict[str, Any]:
        missing = [f for f in ("name", "prompt", "schedule") if definition is None or getattr(definition, f) is None]
        if missing:
            raise InvalidRequest(
                f"definition: {', '.join(missing)} required to create a schedule, e.g. "
                "{name: r1-watch, prompt: 'Check r1 interfaces', schedule: 'every 5m'}"
            )
        if any(job.get("name") == definition.name for job in cron.list_jobs(self.home(agent))):
            raise InvalidRequest(f"definition.name: agent '{agent}' already has a schedule named '{definition.name}'")
        self._checked_schedule(definition.schedule)
        return {
            "prompt": definition.prompt,
            "schedule": definition.schedule,
            "name": definition.name,
            "repeat": definition.repeat,
            "skills": definition.skills,
            "deliver": "local",  # findings go to the history; there is no chat to deliver to
        }

    def _updates(self, agent: str, job: Dict[str, Any], definition: Optional[ScheduleDefinition]) -> Dict[str, Any]:
        updates = {k: v for k, v in (definition.model_dump(exclude_none=True) if definition else {}).items()}
        if not updates:
            raise InvalidRequest("definition: give the fields to change, e.g. {prompt: '...'} or {schedule: 'every 10m'}")
        if "name" in updates and any(
            j.get("name") == updates["name"] and j["id"] != job["id"] for j in cron.list_jobs(self.home(agent))
        ):
            raise InvalidRequest(f"definition.name: agent '{agent}' already has a schedule named '{updates['name']}'")
        if "schedule" in updates:
            self._checked_schedule(updates["schedule"])
        if "repeat" in updates:
            updates["repeat"] = {"times": updates["repeat"], "completed": (job.get("repeat") or {}).get("completed", 0)}
        return updates

    @staticmethod
    def _checked_schedule(text: str) -> Dict[str, Any]:
        try:
            schedule = cron.parse_schedule(text)
        except ValueError as error:
            raise InvalidRequest(
                f"definition.schedule: {error}; use 'every 5m', a cron expression such as '*/5 * * * *', "
                "or an ISO time such as 2026-12-24T09:00"
            ) from None
        if schedule.get("kind") == "once" and (parse_time(schedule.get("run_at")) or cron.now()) <= cron.now():
            raise InvalidRequest(f"definition.schedule: {text} is in the past; give a future time or 'every ...'")
        return schedule

    # ---------------------------------------------------------------- views

    def info(self, agent: str, job: Dict[str, Any]) -> ScheduleInfo:
        origin = job.get("origin") or {}
        session = None
        if origin.get("chat_id"):
            session = compat.chat_session(self.runtime.runner, compat.session_key(origin["chat_id"], agent))
        repeat = job.get("repeat") or {}
        state = job.get("state") or ("scheduled" if enabled(job) else "paused")
        return ScheduleInfo(
            schedule_id=job["id"],
            name=str(job.get("name") or job["id"]),
            agent=agent,
            worker=self.worker_name,
            prompt=str(job.get("prompt") or ""),
            schedule=str(job.get("schedule_display") or (job.get("schedule") or {}).get("display") or ""),
            state=state,
            next_run=iso(parse_time(job.get("next_run_at"))) if job.get("next_run_at") else None,
            last_run=iso(parse_time(job.get("last_run_at"))) if job.get("last_run_at") else None,
            last_status=job.get("last_status"),
            runs=int(repeat.get("completed") or 0),
            repeat=repeat.get("times"),
            origin=f"session {session}" if session else ("chat " + origin["chat_id"] if origin.get("chat_id") else "norfab"),
            skills=list(job.get("skills") or []),
        )

    def status(self, agent: Optional[str] = None) -> SchedulerStatus:
        agents = {}
        now = datetime.now(timezone.utc)
        for name in [agent] if agent else self.catalog.available():
            jobs = cron.list_jobs(self.home(name)) if name in self.catalog.agents else []
            due = [(parse_time(j.get("next_run_at")), j) for j in jobs if enabled(j)]
            due = [(t, j) for t, j in due if t]
            agents[name] = AgentSchedules(
                schedules=len(jobs),
                next_due=iso(min((t for t, _ in due), default=None)),
                overdue=[str(j.get("name") or j["id"]) for t, j in due if (now - t).total_seconds() > 5 * TICK],
            )
        return SchedulerStatus(
            ticking=bool(self._thread and self._thread.is_alive()), last_tick=iso(self.last_tick), agents=agents
        )


def enabled(job: Dict[str, Any]) -> bool:
    return bool(job.get("enabled", True)) and job.get("state") != "paused"
