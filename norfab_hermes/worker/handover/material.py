"""
A shift handover's material from one worker: the selected agents' sessions
active since a time (their request, last answer, runs, NorFab jobs, devices
and the changes made with who approved them, from the kept evidence) and
each schedule's newest finding since then (status against its criteria,
run, session, jobs); or, for one case, the sessions of the case's runs
since its first run (scheduled runs belong to no case). The client gathers
it from every worker and asks the designated agent to write the briefing
(``routing.handover``).
"""

from datetime import datetime, timedelta, timezone
from typing import Any, Callable, Dict, List, Optional, Set, Tuple

from ...errors import InvalidRequest
from ...models import (
    GetRunsInput,
    HandoverAction,
    HandoverFinding,
    HandoverMaterial,
    HandoverRun,
    HandoverSession,
    RunsPage,
    SessionDetails,
    parse_duration,
)
from ...safety.redact import scrub
from ..schedules.actions import ScheduleActions
from ..schedules.history import iso, parse_time

DEFAULT_SINCE = timedelta(hours=12)
REQUEST_CHARS = 500
ANSWER_CHARS = 1500
FINDING_CHARS = 1500
HISTORY_READ = 50  # newest runs of a schedule looked through
CASE_RUNS_READ = 1000  # newest runs of a case looked through


def since_time(text: Optional[str], now: Optional[datetime] = None) -> datetime:
    """An ISO time, or a duration back from now such as 12h; InvalidRequest names the forms."""
    now = now or datetime.now(timezone.utc)
    if not text:
        return now - DEFAULT_SINCE
    moment = parse_time(text)
    if moment is not None:
        return moment
    try:
        return now - parse_duration(text)
    except ValueError:
        raise InvalidRequest(f"since: '{text}' is neither an ISO time nor a duration such as 12h") from None


def _last(session: SessionDetails, role: str, chars: int) -> str:
    found = [m.content for m in session.messages if m.role == role and m.content and not m.tool_calls]
    if not found:
        return ""
    text = found[0] if role == "user" else found[-1]
    return text if len(text) <= chars else text[:chars] + " [...]"


class Handover:
    """
    Gathers one worker's handover material.

    Args:
        worker_name: the worker the material is from.
        sessions: the worker's sessions (``list``, ``get``).
        schedules: its schedule actions.
        evidence: the evidence store (``artifacts``).
        agents: the agents this worker can gather for.
        secrets: values to mask.
        runs: the run records (``Records.runs``), for the runs of a case.
    """

    def __init__(
        self,
        worker_name: str,
        sessions: Any,
        schedules: ScheduleActions,
        evidence: Any,
        agents: Callable[[], List[str]],
        secrets: Callable[[], List[str]],
        runs: Callable[[GetRunsInput], RunsPage],
    ) -> None:
        self.worker_name = worker_name
        self.sessions = sessions
        self.schedules = schedules
        self.evidence = evidence
        self.agents = agents
        self.secrets = secrets
        self.runs = runs

    def material(
        self, agents: Optional[List[str]], since: Optional[str], limit: int, case_id: Optional[str] = None
    ) -> HandoverMaterial:
        chosen = [a for a in self.agents() if agents is None or a in agents]
        if case_id:
            of_case, first = self._case(case_id)
            start = since_time(since) if since or first is None else first
            findings: List[HandoverFinding] = []
        else:
            start = since_time(since)
            findings = [f for agent in chosen for f in self._findings(agent, start)]
            scheduled = self._scheduled_sessions(chosen)
        sessions = [
            s
            for agent in chosen
            for s in self._sessions(agent, start, limit)
            if (s.session_id in of_case if case_id else s.session_id not in scheduled)
        ]
        sessions.sort(key=lambda s: s.last_active or "", reverse=True)
        return HandoverMaterial(
            worker=self.worker_name,
            since=iso(start),
            sessions=sessions,
            findings=findings,
            case_id=case_id,
            record_runs=self._record_runs(agents, start, limit, case_id),
        )

    def _record_runs(
        self, agents: Optional[List[str]], start: datetime, limit: int, case_id: Optional[str]
    ) -> List[HandoverRun]:
        """Other workers' runs since ``start`` in the fleet's shared record: a worker that is down hands over through them."""
        page = self.runs(GetRunsInput(limit=limit, since=iso(start), case_id=case_id))
        if page.record is None:  # the worker's own record holds only its own runs
            return []
        return [
            HandoverRun(
                run_id=r.run_id,
                agent=r.agent,
                worker=r.worker,
                ending=r.stop_reason or r.state,
                started=r.started,
                session_id=r.session_id,
                request=scrub(r.instructions, self.secrets()),
                answer=scrub(r.response, self.secrets()),
            )
            for r in page.runs
            if r.worker != self.worker_name and (agents is None or r.agent in agents)
        ]

    def _case(self, case_id: str) -> Tuple[Set[str], Optional[datetime]]:
        """The sessions of a case's runs on this worker, and when its first run started."""
        runs = self.runs(GetRunsInput(limit=CASE_RUNS_READ, case_id=case_id)).runs
        started = [at for at in (parse_time(r.started) for r in runs) if at is not None]
        return {r.session_id for r in runs if r.session_id}, min(started, default=None)

    def _sessions(self, agent: str, start: datetime, limit: int) -> List[HandoverSession]:
        found = []
        for summary in self.sessions.list(agent, limit):
            if (parse_time(summary.last_active) or start) < start:
                continue
            session = self.sessions.get(agent, summary.session_id, 500)
            artifacts = self.evidence.artifacts(agent, session_id=summary.session_id)
            actions: Dict[Tuple[str, Optional[str], Optional[str]], HandoverAction] = {}
            for a in artifacts:
                if a.approved_by:
                    actions.setdefault(
                        (a.run_id, a.job_uuid, a.device),
                        HandoverAction(
                            tool=a.tool,
                            run_id=a.run_id,
                            job_uuid=a.job_uuid,
                            device=a.device,
                            approved_by=a.approved_by,
                        ),
                    )
            found.append(
                HandoverSession(
                    worker=self.worker_name,
                    agent=agent,
                    session_id=summary.session_id,
                    title=summary.title,
                    last_active=summary.last_active,
                    request=scrub(_last(session, "user", REQUEST_CHARS), self.secrets()),
                    answer=scrub(_last(session, "assistant", ANSWER_CHARS), self.secrets()),
                    runs=sorted({a.run_id for a in artifacts}),
                    jobs=sorted({a.job_uuid for a in artifacts if a.job_uuid}),
                    devices=sorted({a.device for a in artifacts if a.device}),
                    actions=list(actions.values()),
                )
            )
        return found

    def _scheduled_sessions(self, agents: List[str]) -> Set[str]:
        """Sessions of scheduled runs: they are handed over as findings."""
        return {
            run.session_id
            for agent in agents
            for run in self.schedules.history.runs(agent, None, 10_000)
            if run.session_id
        }

    def _findings(self, agent: str, start: datetime) -> List[HandoverFinding]:
        found = []
        for schedule in self.schedules.list_schedules(agent).schedules:
            runs = self.schedules.runs(agent, schedule.schedule_id, HISTORY_READ).history
            newest = next(
                (r for r in runs if r.status not in ("missed", "queued") and (parse_time(r.started) or start) >= start),
                None,
            )
            if newest is None:
                continue
            finding = scrub(newest.response, self.secrets())
            found.append(
                HandoverFinding(
                    worker=self.worker_name,
                    agent=agent,
                    schedule_id=schedule.schedule_id,
                    name=schedule.name,
                    status=newest.status,
                    started=newest.started,
                    run_id=newest.run_id,
                    session_id=newest.session_id,
                    finding=finding if len(finding) <= FINDING_CHARS else finding[:FINDING_CHARS] + " [...]",
                    jobs=sorted({c.job_uuid for c in newest.tool_calls if c.job_uuid}),
                    criteria=newest.criteria,
                )
            )
        return found
