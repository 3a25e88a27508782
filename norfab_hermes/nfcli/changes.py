"""
The change envelope from the ``nf#`` shell: ``hermes safety`` (devices being
changed, open breakers, changes of unknown outcome), ``hermes acknowledge ID``
and ``hermes reset-breaker AGENT``; and how a change's preview is shown in the
approval screens.

A change of unknown outcome and a breaker live on one worker: ``acknowledge``
asks every selected worker and the one that knows the id answers;
``reset-breaker`` goes to the agent's worker.
"""

from typing import Any, Dict, List, Optional

from pydantic import Field
from rich.console import Group, RenderableType
from rich.text import Text

from ..models import BreakerState, ChangesStatus, OutcomeUnknown, WorkerStatus
from ..routing import Router
from .common import NoteOption, WorkersOption, as_str, guarded, hint, misparsed, router
from .live import error_text
from .tables import WRAP, short_time, table
from .views import failed

USAGE = """  hermes safety (workers SELECTOR)
  hermes acknowledge OUTCOME_ID (note "WHAT THE DEVICES SHOW") (workers SELECTOR)
  hermes reset-breaker AGENT (note "WHY") (workers WORKER)
    a change of unknown outcome blocks its devices until it is acknowledged; a breaker stops an agent's
    changes after failed verifications until it is reset."""

UNKNOWN_COLUMNS = ["worker", "outcome", "agent", "run", "tool", "devices", "started", "reason"]
BREAKER_COLUMNS = ["worker", "agent", "failed in a row", "open since", "last reset by", "note"]
LOCK_COLUMNS = ["worker", "device", "agent", "run", "tool", "since"]


def usage(problem: str) -> Text:
    return error_text([problem, "usage:", USAGE])


class HermesAcknowledgeCommand(NoteOption):
    @staticmethod
    def run(outcome_id: str, note: Any = None, workers: Optional[str] = None, **kwargs: Any) -> RenderableType:
        if refused := misparsed(kwargs):
            return refused
        if note is True:
            return usage('note takes what the devices show, quoted: hermes acknowledge ID note "..."')
        ref, why, where = str(outcome_id), as_str(note), as_str(workers)
        return guarded(lambda: acknowledge(router(), ref, why, where))


class HermesResetBreakerCommand(NoteOption):
    @staticmethod
    def run(agent: str, note: Any = None, workers: Optional[str] = None, **kwargs: Any) -> RenderableType:
        if refused := misparsed(kwargs):
            return refused
        if note is True:
            return usage('note takes why, quoted: hermes reset-breaker AGENT note "..."')
        why, where = as_str(note), as_str(workers)
        return guarded(lambda: reset_breaker(router(), str(agent), why, where))


class HermesSafetyCommand(WorkersOption):
    @staticmethod
    def run(workers: Optional[str] = None, **kwargs: Any) -> RenderableType:
        return misparsed(kwargs) or guarded(lambda: safety(router(), as_str(workers)))


def outcome_verb() -> Any:
    return Field(
        None,
        description="Acknowledge a change of unknown outcome, after checking its devices",
        json_schema_extra={"pkey": "outcome_id", "pkey_description": "Outcome id, from 'hermes safety'"},
    )


def envelopes(replies: Dict[str, dict]) -> Dict[str, ChangesStatus]:
    """The change envelope of every worker whose get_status answered."""
    return {
        worker: WorkerStatus.model_validate(res["result"]).changes
        for worker, res in sorted(replies.items())
        if not failed(res)
    }


def safety(routes: Router, workers: Optional[str]) -> RenderableType:
    """``hermes safety``: every selected worker's device locks, breakers and changes of unknown outcome."""
    replies = routes.status(workers)
    statuses = envelopes(replies)
    problems = [Text.assemble(f"{w}: ", problem) for w, res in sorted(replies.items()) if (problem := failed(res))]
    locks = [
        [worker, lock.device, lock.agent, lock.run_id, lock.tool, short_time(lock.since)]
        for worker, status in statuses.items()
        for lock in status.locks
    ]
    locks_table = table("devices being changed", LOCK_COLUMNS, locks, drop=["since", "tool", "worker"])
    return Group(*problems, *envelope_views(statuses, always=True), locks_table)


def envelope_views(statuses: Dict[str, ChangesStatus], always: bool = False) -> List[RenderableType]:
    """Changes of unknown outcome and breakers with failures, as tables (``hermes status`` and ``hermes safety``)."""
    unknown = [outcome_row(worker, o) for worker, status in statuses.items() for o in status.outcome_unknown]
    breakers = [breaker_row(worker, b) for worker, status in statuses.items() for b in status.breakers]
    views: List[RenderableType] = []
    if unknown or always:
        title = "changes of unknown outcome: check the devices, then acknowledge"
        drop = ["started", "tool", "worker", "run", "agent", "reason"]
        views.append(table(title, UNKNOWN_COLUMNS, unknown, drop=drop, text={"reason": WRAP, "devices": WRAP}))
    if unknown:
        views.append(hint('acknowledge one: hermes acknowledge OUTCOME note "WHAT THE DEVICES SHOW"'))
    if breakers or always:
        drop = ["last reset by", "open since", "worker"]
        views.append(table("change breakers", BREAKER_COLUMNS, breakers, drop=drop, text={"note": WRAP}))
    if any(b.open for status in statuses.values() for b in status.breakers):
        views.append(hint('let an agent change again: hermes reset-breaker AGENT note "WHY"'))
    return views


def outcome_row(worker: str, o: OutcomeUnknown) -> List[Any]:
    return [
        worker,
        o.outcome_id,
        o.agent,
        o.run_id,
        o.tool,
        ", ".join(o.devices),
        short_time(o.started),
        Text(o.reason, style="red"),
    ]


def breaker_row(worker: str, b: BreakerState) -> List[Any]:
    failures = Text(f"{b.failures}/{b.threshold}" + (" (open)" if b.open else ""), style="red" if b.open else "yellow")
    return [worker, b.agent, failures, short_time(b.opened) if b.opened else None, b.reset_by, b.note]


def acknowledge(routes: Router, outcome_id: str, note: Optional[str], workers: Optional[str]) -> RenderableType:
    parts: List[RenderableType] = []
    for worker, res in sorted(routes.acknowledge(outcome_id, note, workers).items()):
        problem = failed(res)
        if problem:
            parts.append(problem)
            continue
        o = OutcomeUnknown.model_validate(res["result"])
        parts.append(
            Text(
                f"change job {o.job_uuid} of run {o.run_id} ({o.tool} on {', '.join(o.devices)}, worker '{worker}') "
                f"acknowledged by {o.acknowledged_by or 'unknown'}" + (f"; note: {o.note}" if o.note else "")
            )
        )
    return Group(*parts)


def reset_breaker(routes: Router, agent: str, note: Optional[str], workers: Optional[str]) -> RenderableType:
    target = routes.resolve(agent, workers)
    res = routes.one("reset_breaker", target, {"note": note} if note is not None else {})
    problem = failed(res)
    if problem:
        return problem
    state = BreakerState.model_validate(res["result"])
    return Text(
        f"agent '{state.agent}' on worker '{target.worker}' may change devices again (breaker reset by {state.reset_by})"
    )


def preview_view(preview: Dict[str, str], title: str) -> RenderableType:
    """A change's preview, per device: device text is shown as text, never as markup."""
    parts: List[RenderableType] = [Text(title, style="bold")]
    for device, text in preview.items():
        parts.append(Text(f"  {device}:", style="cyan"))
        parts.extend(Text(f"  | {line}") for line in text.splitlines() or [""])
    return Group(*parts)
