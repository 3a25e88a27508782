"""
Hermes' cron, one profile's store at a time.

Every profile keeps its own native cron store (``<profile>/cron/jobs.json``,
``output/``); Hermes' executions ledger is shared in the instance root. Each
call here enters the profile's runtime scope and points Hermes' cron module
at that profile's store, so jobs, next-run times, grace, catch-up and output
are Hermes' own. Only the execution of a due job is the host's (see
:func:`run_jobs_with`): a scheduled run is a real run of the agent.
"""

import contextlib
import os
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

from . import compat
from .records import CronJob

# what Hermes' run_job returns: success, output document, final response, error
CronOutcome = Tuple[bool, str, str, Optional[str]]
# job fields that would run code or shell commands, or skip the agent: never honoured
HOST_FIELDS = ("script", "workdir", "no_agent")


def job(raw: Dict[str, Any]) -> CronJob:
    repeat = raw.get("repeat") or {}
    schedule = raw.get("schedule") or {}
    return CronJob(
        id=raw["id"],
        name=str(raw.get("name") or raw["id"]),
        prompt=str(raw.get("prompt") or ""),
        schedule=schedule,
        display=str(raw.get("schedule_display") or schedule.get("display") or ""),
        state=raw.get("state"),
        enabled=bool(raw.get("enabled", True)) and raw.get("state") != "paused",
        next_run_at=raw.get("next_run_at"),
        last_run_at=raw.get("last_run_at"),
        last_status=raw.get("last_status"),
        repeat_times=repeat.get("times"),
        runs=int(repeat.get("completed") or 0),
        origin_chat_id=(raw.get("origin") or {}).get("chat_id"),
        skills=list(raw.get("skills") or []),
        host_fields=[f for f in HOST_FIELDS if raw.get(f)],
        raw=raw,
        compare=raw["id"] in (raw.get("context_from") or []),
    )


def _job(raw: Optional[Dict[str, Any]]) -> Optional[CronJob]:
    return job(raw) if raw else None


@contextlib.contextmanager
def store(home: Path) -> Iterator[Any]:
    """Hermes' cron jobs module, acting on the store of the profile at ``home``."""
    from cron import jobs

    with compat.profile_scope(home), jobs.use_cron_store(home):
        yield jobs


def create(home: Path, **fields: Any) -> CronJob:
    with store(home) as jobs:
        return job(jobs.create_job(**fields))


def list_jobs(home: Path) -> List[CronJob]:
    with store(home) as jobs:
        return [job(raw) for raw in jobs.list_jobs(include_disabled=True)]


def get(home: Path, ref: str) -> Optional[CronJob]:
    """The job with this id, or else this name."""
    with store(home) as jobs:
        return _job(jobs.resolve_job_ref(ref))


def update(home: Path, job_id: str, updates: Dict[str, Any]) -> Optional[CronJob]:
    with store(home) as jobs:
        return _job(jobs.update_job(job_id, updates))


def carry_previous(home: Path, job_id: str, on: bool) -> Optional[CronJob]:
    """Whether the job's latest output goes in front of its next prompt (Hermes' context_from, its own id)."""
    return update(home, job_id, {"context_from": [job_id] if on else None})


def end(home: Path, job_id: str, reason: str) -> Optional[CronJob]:
    """The job is done (as Hermes marks a job whose runs are used up): it stays listed, never runs again."""
    return update(home, job_id, {"enabled": False, "state": "completed", "paused_reason": reason})


def pause(home: Path, job_id: str, reason: str) -> Optional[CronJob]:
    with store(home) as jobs:
        return _job(jobs.pause_job(job_id, reason))


def resume(home: Path, job_id: str) -> Optional[CronJob]:
    with store(home) as jobs:
        return _job(jobs.resume_job(job_id))


def trigger(home: Path, job_id: str) -> Optional[CronJob]:
    with store(home) as jobs:
        return _job(jobs.trigger_job(job_id))


def remove(home: Path, job_id: str) -> bool:
    with store(home) as jobs:
        removed: bool = jobs.remove_job(job_id)
        return removed


def parse_schedule(text: str) -> Dict[str, Any]:
    """Hermes' reading of a schedule: ``every 5m``, a cron expression, ``30m`` or an ISO time."""
    from cron.jobs import parse_schedule as parse

    parsed: Dict[str, Any] = parse(text)
    return parsed


def grace_seconds(schedule: Dict[str, Any]) -> int:
    """How late a recurring run may start and still count (later: skipped, run once now)."""
    return compat.cron_grace_seconds(schedule)


def next_run(schedule: Dict[str, Any], after: str) -> Optional[str]:
    from cron.jobs import compute_next_run

    due: Optional[str] = compute_next_run(schedule, after)
    return due


def now() -> datetime:
    """Hermes' clock, in its configured time zone."""
    now: datetime = compat.cron_now()
    return now


def tick(home: Path, adapters: Dict[Any, Any], loop: Any) -> int:
    """Run the profile's due jobs (dispatched to Hermes' cron pool, not waited for)."""
    from cron import scheduler

    with store(home):
        ran: int = scheduler.tick(verbose=False, adapters=adapters, loop=loop, sync=False)
        return ran


def size_pool(threads: int) -> None:
    """Let Hermes' cron hand up to ``threads`` due jobs to the host at once (``HERMES_CRON_MAX_PARALLEL``,
    unless the worker's environment sets it): the host's admission, not Hermes' pool, orders and bounds the runs."""
    os.environ.setdefault("HERMES_CRON_MAX_PARALLEL", str(threads))


def job_prompt(scheduled: CronJob) -> Optional[str]:
    """The prompt Hermes would send for the job: its cron guidance, skills and context jobs included."""
    return compat.cron_job_prompt(scheduled.raw)


def is_silent(text: str) -> bool:
    """Whether a response asks Hermes not to deliver it (``[SILENT]``)."""
    return compat.cron_is_silent(text)


def run_jobs_with(execute: Callable[[CronJob], CronOutcome]) -> None:
    """Make ``execute(job)`` the way Hermes runs a due job.

    Hermes' cron builds an agent of its own for each run (``run_job``). The
    host runs the job as a run of the agent instead, through the gateway,
    with the agent's tools, budgets and run registry; claiming, the ledger,
    output files, delivery and next-run bookkeeping stay Hermes'.
    """
    from cron import scheduler

    def run_job(raw: Dict[str, Any], *, defer_agent_teardown: Optional[List[Any]] = None) -> CronOutcome:
        return execute(job(raw))

    scheduler.run_job = run_job


def active_profile() -> str:
    from hermes_cli.profiles import get_active_profile_name

    profile: str = get_active_profile_name()
    return profile
