"""
The history of scheduled runs, kept beside each agent's cron store in
``<profile>/cron/norfab_history.jsonl``: one line per run (and one per batch
of runs Hermes skipped), the newest HISTORY_KEPT per schedule. It needs no
client: whoever asks later reads what ran while nobody watched.

An occurrence that fell due while every run slot was busy is written as
``queued`` at once; the record of its run (same schedule, same due time)
replaces it when read. One still queued when the worker stopped is recorded
``skipped`` when the worker starts again (``settle_queued``).
"""

import logging
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

from ...models import ScheduleRun
from ..files import write_file

log = logging.getLogger(__name__)

HISTORY_FILE = "norfab_history.jsonl"
HISTORY_KEPT = 200  # runs kept per schedule


def iso(moment: Optional[datetime]) -> Optional[str]:
    return moment.astimezone(timezone.utc).isoformat(timespec="milliseconds") if moment else None


def parse_time(text: Any) -> Optional[datetime]:
    try:
        moment = datetime.fromisoformat(str(text))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def newest(runs: List[ScheduleRun], kept: int) -> List[ScheduleRun]:
    """The newest ``kept`` runs of every schedule, in their order."""
    seen: Dict[str, int] = {}
    chosen = []
    for run in reversed(runs):
        seen[run.schedule_id] = seen.get(run.schedule_id, 0) + 1
        if seen[run.schedule_id] <= kept:
            chosen.append(run)
    return list(reversed(chosen))


def settled(runs: List[ScheduleRun]) -> List[ScheduleRun]:
    """The runs without the ``queued`` records of occurrences recorded again later (they ran or were skipped)."""
    later = set()
    kept = []
    for run in reversed(runs):
        key = (run.schedule_id, run.due)
        if run.status == "queued" and key in later:
            continue
        later.add(key)
        kept.append(run)
    return list(reversed(kept))


# told(agent, run, runs): a run just recorded; runs(agent, schedule_id, limit) reads the newest ones
Told = Callable[[str, ScheduleRun, Callable[[str, Optional[str], int], List[ScheduleRun]]], None]


class ScheduleHistory:
    """Runs of every agent's schedules; ``home(agent)`` is the agent's profile home."""

    def __init__(self, worker_name: str, home: Callable[[str], Path], told: Optional[Told] = None) -> None:
        self.worker_name = worker_name
        self.home = home
        self.told = told  # the notifier: each run once recorded, with a way to read the schedule's newest runs
        self._lock = threading.Lock()
        self._appends: Dict[str, int] = {}  # agent -> runs recorded since its file was last pruned

    def _file(self, agent: str) -> Path:
        return self.home(agent) / "cron" / HISTORY_FILE

    def record(self, agent: str, run: ScheduleRun) -> None:
        path = self._file(agent)
        with self._lock:
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("a", encoding="utf-8") as history:
                history.write(run.model_dump_json() + "\n")
            self._appends[agent] = self._appends.get(agent, 0) + 1
            if self._appends[agent] >= HISTORY_KEPT:  # prune now and then, not at every run
                self._appends[agent] = 0
                self._write(agent, newest(settled(self._read(agent)), HISTORY_KEPT))
        if self.told is not None and run.status != "queued":  # a queued occurrence is told once it ran
            self.told(agent, run, self.runs)

    def _read(self, agent: str) -> List[ScheduleRun]:
        path = self._file(agent)
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
        write_file(self._file(agent), "".join(r.model_dump_json() + "\n" for r in runs))

    def runs(self, agent: str, schedule_id: Optional[str], limit: int) -> List[ScheduleRun]:
        runs = [r for r in settled(self._read(agent)) if schedule_id is None or r.schedule_id == schedule_id]
        return list(reversed(runs))[:limit]

    def settle_queued(self, agent: str, note: str) -> int:
        """Record every occurrence still ``queued`` (the worker stopped before it ran) as skipped; how many."""
        stale = [r for r in settled(self._read(agent)) if r.status == "queued"]
        for run in stale:
            self.record(agent, ScheduleRun(schedule_id=run.schedule_id, status="skipped", due=run.due, note=note))
        return len(stale)

    def forget(self, agent: str, schedule_id: str) -> None:
        """Drop a removed schedule's runs."""
        with self._lock:
            self._write(agent, [r for r in self._read(agent) if r.schedule_id != schedule_id])
