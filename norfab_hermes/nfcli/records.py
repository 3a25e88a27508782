"""
The workers' records from the ``nf#`` shell: ``hermes runs`` lists past runs
(filtered, newest first), ``hermes audit export`` writes the audit logs as
JSON lines and ``hermes audit verify`` checks their hash chains. Each worker
keeps its own records, so every command asks the selected workers.
"""

from pathlib import Path
from typing import Any, Dict, List, Optional

from pydantic import BaseModel, ConfigDict, Field, StrictInt
from rich.console import Group, RenderableType
from rich.text import Text

from ..models import AuditVerifyData, RunsPage, RunSummary
from ..routing import Router, records
from .common import WorkersOption, as_str, guarded, hint, misparsed, router
from .picle_compat import Maybe
from .tables import CLIP, WRAP, short_time, table
from .views import failed

USAGE = """  hermes runs (agent AGENT) (state STATE) (stop_reason REASON) (since AGE|TIME) (until AGE|TIME)
    (schedule ID) (decided_by CLIENT) (text "TEXT") (case-id CASE) (limit N) (offset N) (workers SELECTOR)
  hermes audit export (file PATH) (agent AGENT) (run RUN_ID) (kind KIND) (since AGE|TIME) (workers SELECTOR)
  hermes audit verify (workers SELECTOR)
    AGE: 30m, 12h, 7d before now; TIME: an ISO time such as 2026-12-01T02:00 (UTC unless it says)."""

RUN_FILTERS = ("agent", "state", "stop_reason", "since", "until", "schedule_id", "decided_by", "text", "case_id")
AUDIT_FILTERS = ("agent", "run_id", "kind", "since", "until")
ENDING_STYLES = {"completed": "green", "running": "cyan", "queued": "cyan", "waiting_for_approval": "yellow"}


def one_text(value: Any) -> Optional[str]:
    """A plain ``str`` option as typed: unquoted words arrive as a list, a bare option as True."""
    if value is None or value is True:
        return None
    return " ".join(map(str, value)) if isinstance(value, list) else str(value)


class HermesRunsCommand(WorkersOption):
    model_config = ConfigDict(populate_by_name=True)
    # plain str: PICLE keeps such values as typed (an id 0012, an age 30m)
    agent: Maybe[str] = Field(None, description="Only this agent's runs")
    state: Maybe[str] = Field(None, description="queued, running, waiting_for_approval or finished")
    stop_reason: Maybe[str] = Field(None, description="completed, interrupted, token_budget, daily_budget, ...")
    since: Maybe[str] = Field(None, description="From an age before now (30m, 12h, 7d) or an ISO time")
    until: Maybe[str] = Field(None, description="Up to an age before now or an ISO time")
    schedule_id: Maybe[str] = Field(None, alias="schedule", description="Only the runs of this schedule (its id)")
    decided_by: Maybe[str] = Field(None, description="Only runs with an approval this NorFab client decided")
    text: Maybe[str] = Field(None, description="Only runs whose instructions or answer hold this text (quote it)")
    case_id: Maybe[str] = Field(
        None, alias="case-id", description="Only the runs of this case (incident), e.g. INC-2041"
    )
    limit: Optional[StrictInt] = Field(None, description="Newest runs per worker (default 20)")
    offset: Optional[StrictInt] = Field(None, description="Runs to skip per worker, for the next page")

    @staticmethod
    def run(workers: Optional[str] = None, limit: Any = None, offset: Any = None, **kwargs: Any) -> RenderableType:
        filters = {name: one_text(kwargs.pop(name, None)) for name in RUN_FILTERS}
        if refused := misparsed(kwargs):
            return refused
        where = as_str(workers)
        return guarded(lambda: runs_view(router(), where, filters, limit or 20, offset or 0))


class HermesAuditExportCommand(WorkersOption):
    model_config = ConfigDict(populate_by_name=True)
    file: Maybe[str] = Field(
        None, description="Write the entries to this JSON lines file (on this host); else show them"
    )
    agent: Maybe[str] = Field(None, description="Only this agent's entries")
    run_id: Maybe[str] = Field(None, alias="run", description="Only this run's entries")
    kind: Maybe[str] = Field(None, description="Only entries of this kind, e.g. approval.decided")
    since: Maybe[str] = Field(None, description="From an age before now (30m, 12h, 7d) or an ISO time")
    until: Maybe[str] = Field(None, description="Up to an age before now or an ISO time")

    @staticmethod
    def run(workers: Optional[str] = None, file: Any = None, **kwargs: Any) -> RenderableType:
        filters = {name: one_text(kwargs.pop(name, None)) for name in AUDIT_FILTERS}
        if refused := misparsed(kwargs):
            return refused
        where, path = as_str(workers), one_text(file)
        return guarded(lambda: export(router(), where, filters, Path(path).expanduser() if path else None))


class HermesAuditVerifyCommand(WorkersOption):
    @staticmethod
    def run(workers: Optional[str] = None, **kwargs: Any) -> RenderableType:
        return misparsed(kwargs) or guarded(lambda: verify_view(records.verify_audit(router(), as_str(workers))))


class HermesAuditCommand(BaseModel):
    export: Maybe[HermesAuditExportCommand] = Field(None, description="Write or show the audit logs as JSON lines")
    verify: Maybe[HermesAuditVerifyCommand] = Field(
        None, description="Check every entry of the audit logs and their links"
    )


# ------------------------------------------------------------------- views


def runs_view(
    routes: Router, workers: Optional[str], filters: Dict[str, Any], limit: int, offset: int
) -> RenderableType:
    """``hermes runs``: the runs of every selected worker, newest first."""
    replies = records.runs(routes, workers, limit=limit, offset=offset, **filters)
    found: List[tuple] = []
    problems: List[RenderableType] = []
    more = False
    shared = [worker for worker, res in sorted(replies.items()) if records.record_of(res)]
    for worker, res in sorted(replies.items()):
        problem = failed(res)
        if problem:
            problems.append(Text.assemble(f"{worker}: ", problem))
            continue
        page = RunsPage.model_validate(res["result"])
        more = more or page.next_offset is not None
        found += [(run.worker, run) for run in page.runs]
    found.sort(key=lambda item: item[1].started, reverse=True)
    several = len(replies) > 1 or bool(shared)
    cased = any(run.case_id for _, run in found)  # a case column only when some run has a case
    columns = (["worker"] if several else []) + ["run", "agent", *(["case"] if cased else [])]
    columns += ["started", "ended", "tokens", "asked"]
    rows = [([worker] if several else []) + run_row(run, cased) for worker, run in found]
    title = "runs" if several or not replies else f"runs of worker '{next(iter(replies))}'"
    answered = len(problems) < len(replies)
    view = table(title, columns, rows, drop=["tokens", "started", "case"], text={"asked": CLIP})
    parts: List[RenderableType] = [*problems, *([view] if answered else [])]
    if shared:
        parts.append(hint(f"from the fleet's shared record, answered by {', '.join(shared)}: every worker's runs"))
    if found:
        worker, newest = found[0]
        parts.append(hint(f"read one: hermes run {newest.agent} {newest.run_id} workers {worker}"))
    if more:
        parts.append(hint(f"older runs: the same command with offset {offset + limit}"))
    return Group(*parts)


def run_row(run: RunSummary, cased: bool = False) -> List[Any]:
    ending = run.stop_reason or run.state
    return [
        run.run_id,
        run.agent,
        *([run.case_id] if cased else []),
        short_time(run.started),
        Text(ending, style=ENDING_STYLES.get(ending, "yellow")),
        run.usage.total_tokens,
        " ".join(run.instructions.split()),
    ]


def export(routes: Router, workers: Optional[str], filters: Dict[str, Any], path: Optional[Path]) -> RenderableType:
    """``hermes audit export``: every matching entry of every selected worker, oldest first per worker."""
    entries, counts = records.export(routes, workers, **filters)
    lines = [entry.model_dump_json() for entry in entries]
    summary = ", ".join(f"{count} of {worker}" for worker, count in counts.items())
    if path is None:
        return Group(*[Text(line) for line in lines], hint(f"{len(lines)} entries ({summary})"))
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return Group(
        Text(f"wrote {len(lines)} audit entries ({summary}) to {path}"),
        hint("keep it, and the heads 'hermes audit verify' shows, off the worker hosts to prove the logs later"),
    )


def verify_view(replies: Dict[str, dict]) -> RenderableType:
    rows, problems = [], []
    for worker, res in sorted(replies.items()):
        problem = failed(res)
        if problem:
            rows.append([worker, Text("?", style="red"), "", "", problem])
            continue
        found = AuditVerifyData.model_validate(res["result"])
        span = f"{found.first_seq}-{found.last_seq}" if found.entries else "-"
        intact = Text("yes", style="green") if found.ok else Text("NO", style="bold red")
        where = f"{worker} (the fleet's shared record)" if found.record else worker
        rows.append([where, intact, found.entries, span, found.head])
        problems += [Text(f"{worker}: {problem}", style="red") for problem in found.problems]
    columns = ["worker", "intact", "entries", "seq", "head"]
    parts: List[RenderableType] = [
        table("audit logs", columns, rows, drop=["seq", "entries"], text={"head": WRAP}),
        *problems,
    ]
    if problems:
        parts.append(hint("an entry that was edited or deleted cannot be restored here: compare with an export"))
    return Group(*parts)
