"""
Schedules that compare: what a watched schedule holds beyond Hermes' own
job (acceptance criteria, the end of its observation period, the answer's
schema) and how each run is judged against it.

Hermes keeps the job and carries the previous run's finding into the next
run itself (``context_from`` naming the job's own id: its latest output is
put in front of the prompt). The rest lives beside the cron store, in
``<profile>/cron/norfab_watch.json`` by job id. Every run is checked against
the criteria on its evidence (the tool results it received, kept whole) or
its finding: a run that meets them is ``ok``, or ``recovered`` after a
regression; one that does not is ``regressed``.
"""

import json
import re
import threading
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

from ...models import ArtifactSummary, Criterion, CriterionResult, ScheduleDefinition, ScheduleRun, parse_duration
from ..files import write_file

WATCH_FILE = "norfab_watch.json"
WATCH_FIELDS = ("criteria", "observe_for", "response_schema", "group")
JUDGED = ("ok", "regressed", "recovered")  # runs that were checked against criteria
DETAIL_CHARS = 200


@dataclass
class Watch:
    """One schedule's criteria, observation end and answer schema."""

    criteria: List[Criterion] = field(default_factory=list)
    until: Optional[str] = None  # ISO time the observation period ends
    response_schema: Optional[Dict[str, Any]] = None
    group: Optional[str] = None  # the workers that share its occurrences

    def ended(self, now: datetime) -> bool:
        return self.until is not None and datetime.fromisoformat(self.until) <= now


class Watches:
    """The watch settings of every agent's schedules; ``home(agent)`` is the agent's profile home."""

    def __init__(self, home: Callable[[str], Path]) -> None:
        self.home = home
        self._lock = threading.Lock()

    def _file(self, agent: str) -> Path:
        return self.home(agent) / "cron" / WATCH_FILE

    def _read(self, agent: str) -> Dict[str, Any]:
        path = self._file(agent)
        return json.loads(path.read_text()) if path.exists() else {}

    def get(self, agent: str, job_id: str) -> Watch:
        raw = self._read(agent).get(job_id) or {}
        return Watch(
            criteria=[Criterion.model_validate(c) for c in raw.get("criteria") or []],
            until=raw.get("until"),
            response_schema=raw.get("response_schema"),
            group=raw.get("group"),
        )

    def all(self, agent: str) -> Dict[str, Watch]:
        return {job_id: self.get(agent, job_id) for job_id in self._read(agent)}

    def set(self, agent: str, job_id: str, definition: ScheduleDefinition) -> Watch:
        """Keep the definition's watch fields it gives (an update changes only those)."""
        with self._lock:
            table = self._read(agent)
            entry = table.get(job_id) or {}
            given = definition.model_dump(exclude_none=True, include=set(WATCH_FIELDS))
            if "criteria" in given:
                entry["criteria"] = given["criteria"]
            if "response_schema" in given:
                entry["response_schema"] = given["response_schema"]
            if "group" in given:
                entry["group"] = given["group"]
            if "observe_for" in given:
                entry["until"] = (datetime.now(timezone.utc) + parse_duration(given["observe_for"])).isoformat(
                    timespec="seconds"
                )
            table[job_id] = entry
            self._file(agent).parent.mkdir(parents=True, exist_ok=True)
            write_file(self._file(agent), json.dumps(table, indent=1, sort_keys=True))
        return self.get(agent, job_id)

    def forget(self, agent: str, job_id: str) -> None:
        with self._lock:
            table = self._read(agent)
            if table.pop(job_id, None) is not None:
                write_file(self._file(agent), json.dumps(table, indent=1, sort_keys=True))


def hermes_fields(definition: Optional[ScheduleDefinition]) -> Dict[str, Any]:
    """The fields of a definition Hermes' job holds (everything but the watch fields and compare)."""
    if definition is None:
        return {}
    return definition.model_dump(exclude_none=True, exclude={*WATCH_FIELDS, "compare"})


def judge(
    criteria: List[Criterion], finding: str, evidence: List[Tuple[ArtifactSummary, str]]
) -> List[CriterionResult]:
    """Each criterion, met or not, on the run's finding or its evidence: ``(ArtifactSummary, text)`` pairs."""
    results = []
    for criterion in criteria:
        regex = re.compile(criterion.match, re.M)
        if criterion.tool:
            texts = [
                (f"{a.tool} {a.device or ''} {a.command or ''}".strip(), text)
                for a, text in evidence
                if a.tool == criterion.tool and (criterion.device is None or a.device == criterion.device)
            ]
            if not texts:
                results.append(
                    CriterionResult(
                        criterion=criterion.describe(), met=False, detail=f"{criterion.tool} was not called"
                    )
                )
                continue
        else:
            texts = [("the finding", finding)]
        hit = next(((where, _line(text, m)) for where, text in texts for m in [regex.search(text)] if m), None)
        met = hit is None if criterion.absent else hit is not None
        if hit:
            detail = f"{hit[0]}: {hit[1].strip()[:DETAIL_CHARS]}"
        else:
            detail = f"no line matches in {', '.join(where for where, _ in texts)}"
        results.append(CriterionResult(criterion=criterion.describe(), met=met, detail=detail))
    return results


def _line(text: str, match: "re.Match[str]") -> str:
    """The whole line a match is on."""
    end = text.find("\n", match.end())
    return text[text.rfind("\n", 0, match.start()) + 1 : end if end >= 0 else len(text)]


def status(base: str, results: List[CriterionResult], previous: Optional[str]) -> str:
    """A run's status: its own unless it completed and was checked; then ok, regressed or recovered."""
    if base != "ok" or not results:
        return base
    if not all(r.met for r in results):
        return "regressed"
    return "recovered" if previous == "regressed" else "ok"


def previous_status(history: List[ScheduleRun]) -> Optional[str]:
    """The status of the newest run that was judged (history newest first)."""
    return next((run.status for run in history if run.status in JUDGED), None)


def evidence_of(artifacts: List[ArtifactSummary], texts: Dict[str, str]) -> List[Tuple[ArtifactSummary, str]]:
    return [(a, texts[a.artifact_id]) for a in artifacts if a.artifact_id in texts]
