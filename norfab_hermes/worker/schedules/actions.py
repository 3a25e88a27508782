"""
The schedule task's actions on one agent's native cron store: create, list,
update, pause, resume, remove, run now and history, with input checked so
that a bad request names the field and the fix.
"""

from pathlib import Path
from typing import Any, Callable, Dict, Optional, Sequence

from ...errors import InvalidRequest, UnknownSchedule
from ...models import ScheduleDefinition, ScheduleInfo, ScheduleResultData, ScheduleRun
from ..hermes import cron
from ..hermes.records import CronJob
from ..hermes.runtime import HermesRuntime
from .history import ScheduleHistory, iso, parse_time
from .watch import Watches, hermes_fields


class ScheduleActions:
    """
    Schedule task actions.

    Args:
        worker_name: for messages.
        home: the agent's profile home.
        history: the runs of the schedules.
        runtime: the Hermes runtime (sessions of chat-created schedules).
        wake: asks the scheduler to check the stores now.
        stopped: whether an agent is stopped (its schedules do not fire).
        watches: the schedules' criteria, observation periods and answer schemas.
    """

    def __init__(
        self,
        worker_name: str,
        home: Callable[[str], Path],
        history: ScheduleHistory,
        runtime: HermesRuntime,
        wake: Callable[[], None],
        stopped: Callable[[str], bool],
        watches: Watches,
    ) -> None:
        self.worker_name = worker_name
        self.home = home
        self.history = history
        self.runtime = runtime
        self.wake = wake
        self.stopped = stopped
        self.watches = watches

    def act(
        self, agent: str, action: str, ref: Optional[str], definition: Optional[ScheduleDefinition], limit: int
    ) -> ScheduleResultData:
        """The schedule task's action: the one place where a verb is a string."""
        if action == "list":
            return self.list_schedules(agent)
        if action == "create":
            return self.create(agent, definition)
        if action == "history":
            return self.runs(agent, ref, limit)
        if action == "update":
            return self.update(agent, ref, definition)
        verbs = {"pause": self.pause, "resume": self.resume, "run": self.run_now, "remove": self.remove}
        if action not in verbs:
            raise InvalidRequest(f"action: '{action}' is not a schedule action")
        return verbs[action](agent, ref)

    def list_schedules(self, agent: str) -> ScheduleResultData:
        jobs = cron.list_jobs(self.home(agent))
        return self._answer("list", agent, f"{len(jobs)} schedule(s)", jobs)

    def create(self, agent: str, definition: Optional[ScheduleDefinition]) -> ScheduleResultData:
        job = self._watched(agent, cron.create(self.home(agent), **self._new_job(agent, definition)), definition)
        self.wake()
        return self._answer(
            "create", agent, f"schedule '{job.name}' created, next run {iso(parse_time(job.next_run_at))}", [job]
        )

    def runs(self, agent: str, ref: Optional[str], limit: int) -> ScheduleResultData:
        """The schedule's history, newest first."""
        job = self.find(agent, ref, "history")
        runs = self.history.runs(agent, job.id, limit)
        return self._answer("history", agent, f"{len(runs)} run(s) of schedule '{job.name}'", [job], runs)

    def update(self, agent: str, ref: Optional[str], definition: Optional[ScheduleDefinition]) -> ScheduleResultData:
        job = self.find(agent, ref, "update")
        updates = self._updates(agent, job, definition)
        try:
            job = self._found(agent, job.id, cron.update(self.home(agent), job.id, updates)) if updates else job
        except ValueError as error:
            raise InvalidRequest(f"definition.schedule: {error}") from None
        job = self._watched(agent, job, definition)
        self.wake()
        changed = sorted(definition.model_dump(exclude_none=True)) if definition else []
        return self._answer("update", agent, f"schedule '{job.name}' updated: {', '.join(changed)}", [job])

    def pause(self, agent: str, ref: Optional[str]) -> ScheduleResultData:
        found = self.find(agent, ref, "pause")
        job = self._found(agent, found.id, cron.pause(self.home(agent), found.id, "paused through NorFab"))
        return self._answer("pause", agent, f"schedule '{job.name}' paused; a run in flight goes on", [job])

    def resume(self, agent: str, ref: Optional[str]) -> ScheduleResultData:
        found = self.find(agent, ref, "resume")
        try:
            job = self._found(agent, found.id, cron.resume(self.home(agent), found.id))
        except ValueError as error:
            raise InvalidRequest(f"schedule_id: {error}") from None
        self.wake()
        return self._answer(
            "resume", agent, f"schedule '{job.name}' resumed, next run {iso(parse_time(job.next_run_at))}", [job]
        )

    def run_now(self, agent: str, ref: Optional[str]) -> ScheduleResultData:
        job = self.find(agent, ref, "run")
        if not job.enabled:
            raise InvalidRequest(f"schedule_id: schedule '{job.name}' is paused; resume it to run it")
        job = self._found(agent, job.id, cron.trigger(self.home(agent), job.id))
        self.wake()
        return self._answer("run", agent, f"schedule '{job.name}' runs now; its result will be in its history", [job])

    def remove(self, agent: str, ref: Optional[str]) -> ScheduleResultData:
        job = self.find(agent, ref, "remove")
        cron.remove(self.home(agent), job.id)
        self.history.forget(agent, job.id)
        self.watches.forget(agent, job.id)
        return self._answer("remove", agent, f"schedule '{job.name}' removed with its history")

    def _answer(
        self,
        action: str,
        agent: str,
        message: str,
        jobs: Sequence[CronJob] = (),
        history: Sequence[ScheduleRun] = (),
    ) -> ScheduleResultData:
        return ScheduleResultData(
            action=action,
            agent=agent,
            worker=self.worker_name,
            schedules=[self.info(agent, job) for job in jobs],
            history=list(history),
            message=message,
        )

    def find(self, agent: str, ref: Optional[str], action: str) -> CronJob:
        if not ref:
            raise InvalidRequest(f"schedule_id: '{action}' needs the schedule's id or name (see action 'list')")
        try:
            job = cron.get(self.home(agent), ref)
        except LookupError as error:  # a name shared by several schedules (e.g. created in chat)
            raise InvalidRequest(f"schedule_id: {error}; use the schedule's id") from None
        return self._found(agent, ref, job)

    def _found(self, agent: str, ref: str, job: Optional[CronJob]) -> CronJob:
        """The job Hermes' store returned, or UnknownSchedule (it was removed, or never was)."""
        if job is None:
            raise UnknownSchedule(
                f"schedule '{ref}' not found for agent '{agent}' on worker '{self.worker_name}'; "
                "list them with action 'list'"
            )
        return job

    def _new_job(self, agent: str, definition: Optional[ScheduleDefinition]) -> Dict[str, Any]:
        given = definition or ScheduleDefinition()
        name, prompt, schedule = given.name, given.prompt, given.schedule
        if name is None or prompt is None or schedule is None:
            missing = [f for f, value in (("name", name), ("prompt", prompt), ("schedule", schedule)) if value is None]
            raise InvalidRequest(
                f"definition: {', '.join(missing)} required to create a schedule, e.g. "
                "{name: r1-watch, prompt: 'Check r1 interfaces', schedule: 'every 5m'}"
            )
        self._unique_name(agent, name)
        self._checked_schedule(schedule)
        return {
            "prompt": prompt,
            "schedule": schedule,
            "name": name,
            "repeat": given.repeat,
            "skills": given.skills,
            "deliver": "local",  # findings go to the history; there is no chat to deliver to
        }

    def _watched(self, agent: str, job: CronJob, definition: Optional[ScheduleDefinition]) -> CronJob:
        """Keep the definition's watch fields; compare is Hermes' own context_from."""
        if definition is not None:
            self.watches.set(agent, job.id, definition)
            if definition.compare is not None:
                job = cron.carry_previous(self.home(agent), job.id, definition.compare) or job
        return job

    def _updates(self, agent: str, job: CronJob, definition: Optional[ScheduleDefinition]) -> Dict[str, Any]:
        updates = hermes_fields(definition)
        if not updates and not (definition and definition.model_dump(exclude_none=True)):
            raise InvalidRequest(
                "definition: give the fields to change, e.g. {prompt: '...'} or {schedule: 'every 10m'}"
            )
        if "name" in updates:
            self._unique_name(agent, updates["name"], job.id)
        if "schedule" in updates:
            self._checked_schedule(updates["schedule"])
        if "repeat" in updates:
            updates["repeat"] = {"times": updates["repeat"], "completed": job.runs}
        return updates

    def _unique_name(self, agent: str, name: str, own_id: Optional[str] = None) -> None:
        # Hermes finds a schedule by its name regardless of case
        if any(j.name.lower() == name.lower() and j.id != own_id for j in cron.list_jobs(self.home(agent))):
            raise InvalidRequest(f"definition.name: agent '{agent}' already has a schedule named '{name}'")

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

    def info(self, agent: str, job: CronJob) -> ScheduleInfo:
        session = None
        if job.origin_chat_id:
            session = self.runtime.gateway.chat_session(job.origin_chat_id, agent)
        state = job.state or ("scheduled" if job.enabled else "paused")
        if state == "scheduled" and self.stopped(agent):
            state = "paused-by-stop"  # the agent is stopped: its schedules wait for it
        origin = f"session {session}" if session else (f"chat {job.origin_chat_id}" if job.origin_chat_id else "norfab")
        watch = self.watches.get(agent, job.id)
        return ScheduleInfo(
            schedule_id=job.id,
            name=job.name,
            agent=agent,
            worker=self.worker_name,
            prompt=job.prompt,
            schedule=job.display,
            state=state,
            next_run=iso(parse_time(job.next_run_at)) if job.next_run_at else None,
            last_run=iso(parse_time(job.last_run_at)) if job.last_run_at else None,
            last_status=job.last_status,
            runs=job.runs,
            repeat=job.repeat_times,
            origin=origin,
            skills=job.skills,
            compare=job.compare,
            criteria=watch.criteria,
            until=watch.until,
        )
