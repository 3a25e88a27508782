"""
What the console's pages show, read through the hermes client the ``nf#``
shell uses (``routing``): approvals across workers, runs and one run's
timeline, each worker's identity; and the decisions the pages send. Every
call goes out signed by the session's key (or unsigned where identity is
off); the worker decides what it answers. Blocking: handlers run these on a
thread.
"""

import hashlib
import threading
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from markdown_it import MarkdownIt
from markupsafe import Markup

from ..errors import error_code
from ..models import (
    AgentBudget,
    AgentSummary,
    ApprovalInfo,
    Artifact,
    AuditEntry,
    AuditPage,
    AuditVerifyData,
    EvidenceResultData,
    RunStateData,
    RunSummary,
    ScheduleInfo,
    ScheduleResultData,
    ScheduleRun,
    WorkerStatus,
)
from ..routing import Router, RoutingError, records

RUN_FILTERS = ("agent", "state", "stop_reason", "text", "case_id")  # get_runs filters the runs page offers
HISTORY_SHOWN = 20  # runs of a schedule in its history strip, newest last
DECIDED_SHOWN = 50  # decided and expired approvals the approvals page shows below the pending ones, newest first
HISTORY_SINCE = "7d"  # how far back the workers' audit logs are read for them
ENDED_KINDS = ("approval.decided", "approval.expired")  # the audit entries an approval's end writes

# CommonMark without raw HTML: tags in an answer come out as text; links keep markdown-it's
# check (no javascript:, vbscript:, file: or data: other than images)
_MARKDOWN = MarkdownIt("js-default")


def markdown(text: str) -> Markup:
    """An agent's answer as HTML: Markdown rendered, any HTML in it escaped."""
    return Markup(_MARKDOWN.render(text or ""))


def answer_of(res: Optional[dict]) -> Tuple[bool, str]:
    """(failed, the worker's words) of a Result dict."""
    res = res or {}
    if res.get("failed") or res.get("result") is None:
        return True, "; ".join(res.get("errors") or [str(res.get("status") or "no answer")])
    return False, ""


@dataclass
class Listing:
    """What a page read from the workers, and what some of them answered instead."""

    items: List[Any] = field(default_factory=list)
    problems: List[str] = field(default_factory=list)


def identity(router: Router) -> Dict[str, Tuple[bool, str]]:
    """Each alive hermes worker's identity, asked unsigned: (on, its line). A worker that refuses an
    unsigned ``get_status`` takes only operators' signed requests."""
    unsigned = Router(router.client, router.timeout, signer=None)
    found: Dict[str, Tuple[bool, str]] = {}
    try:
        replies = unsigned.call("get_status", unsigned.select())
    except RoutingError:
        return found  # no hermes worker alive: the pages say so
    for worker, res in replies.items():
        failed, words = answer_of(res)
        if failed:
            found[worker] = (error_code(res) == "not_allowed", words)
        else:
            found[worker] = (False, WorkerStatus.model_validate(res["result"]).identity)
    return found


def pending_approvals(router: Router) -> Listing:
    """Pending approvals of every alive hermes worker, oldest first."""
    listing = Listing()
    try:
        replies = router.call("get_approvals", router.select())
    except RoutingError as error:
        return Listing(problems=[str(error)])
    for worker, res in sorted(replies.items()):
        failed, words = answer_of(res)
        if failed:
            listing.problems.append(f"{worker}: {words}")
            continue
        listing.items += [ApprovalInfo.model_validate(item) for item in res["result"]]
    listing.items.sort(key=lambda approval: approval.requested)
    return listing


@dataclass
class Ended:
    """A decided or expired approval as its worker's audit log keeps it."""

    approval_id: str
    tool: str
    agent: str
    worker: str
    state: str
    decided_by: Optional[str]
    note: Optional[str]
    decided: str


@dataclass
class History:
    """The decided and expired approvals a session has read from the audit logs, and where each log's
    read stopped: each read asks only for the newest of what came after (the first one, of the window)."""

    ended: Dict[Tuple[str, str], Ended] = field(default_factory=dict)  # by (approval id, state)
    after: Dict[Tuple[str, str], int] = field(default_factory=dict)  # by (worker, kind): last seq read
    # a page and its live stream read for one session at once, on two of the console's threads
    lock: threading.Lock = field(default_factory=threading.Lock)

    def newest(self) -> List[Ended]:
        return sorted(self.ended.values(), key=lambda ended: ended.decided, reverse=True)[:DECIDED_SHOWN]


def approval_history(router: Router, history: History) -> List[str]:
    """Read into ``history`` the approvals decided or expired since its last read (within
    ``HISTORY_SINCE``) from every alive worker's audit log (``get_audit``: no task lists the approval
    records themselves); what could not be read."""
    try:
        workers = router.select()
    except RoutingError as error:
        return [str(error)]
    with history.lock:
        return _read_history(router, history, workers)


def _read_history(router: Router, history: History, workers: List[str]) -> List[str]:
    """One ``get_audit`` per worker and kind: the newest ``DECIDED_SHOWN`` entries after the last one
    read, newest first. Older ones could not be shown: the page keeps the newest ``DECIDED_SHOWN`` of all."""
    problems = []
    for worker in workers:
        for kind in ENDED_KINDS:
            after = history.after.get((worker, kind), 0)
            try:
                res = records.audit(
                    router, worker, after, limit=DECIDED_SHOWN, kind=kind, since=HISTORY_SINCE, newest_first=True
                )
            except RoutingError as error:
                problems.append(str(error))
                continue
            failed, words = answer_of(res)
            if failed:
                problems.append(f"{worker}: {words}")
                continue
            for entry in AuditPage.model_validate(res["result"]).entries:
                ended = ended_of(entry, kind)
                history.ended[(ended.approval_id, ended.state)] = ended  # a shared record's: once
                after = max(after, entry.seq)
            history.after[(worker, kind)] = after
    kept = {(ended.approval_id, ended.state) for ended in history.newest()}
    history.ended = {key: ended for key, ended in history.ended.items() if key in kept}
    return problems


def ended_of(entry: AuditEntry, kind: str) -> Ended:
    data = entry.data
    return Ended(
        approval_id=str(data.get("approval_id", "")),
        tool=str(data.get("tool", "")),
        agent=entry.agent or "",
        worker=entry.worker,
        state=str(data.get("state") or kind.split(".")[1]),
        decided_by=data.get("decided_by"),
        note=data.get("note"),
        decided=entry.time,
    )


def decide(router: Router, task: str, approval_id: str, worker: str, note: Optional[str]) -> Tuple[bool, str]:
    """``approve`` or ``deny`` on the approval's worker: (done, what the worker said)."""
    try:
        replies = router.decide(task, approval_id, note or None, workers=worker)
    except RoutingError as error:
        return False, str(error)
    res = replies.get(worker)
    failed, words = answer_of(res)
    if failed:
        return False, f"{worker} refused to {task} {approval_id}: {words}"
    state = ApprovalInfo.model_validate(res["result"]).state  # type: ignore[index]
    return True, f"{task} {approval_id} on {worker}: {state}"


def runs(router: Router, filters: Dict[str, str], worker: Optional[str] = None) -> Listing:
    """Recorded runs of the selected workers, newest first, with ``get_runs`` filters."""
    listing = Listing()
    try:
        replies = records.runs(router, worker or None, limit=50, **{k: v or None for k, v in filters.items()})
    except RoutingError as error:
        return Listing(problems=[str(error)])
    for name, res in sorted(replies.items()):
        failed, words = answer_of(res)
        if failed:
            listing.problems.append(f"{name}: {words}")
            continue
        listing.items += [RunSummary.model_validate(run) for run in res["result"]["runs"]]
    listing.items.sort(key=lambda run: run.started, reverse=True)
    return listing


def run(router: Router, worker: str, agent: str, run_id: str) -> Tuple[Optional[RunStateData], str]:
    """One run's state with all its events (and its envelope once finished); or None and why."""
    try:
        reply = router.call("get_run", [worker], {"agent": agent, "run_id": run_id})
    except RoutingError as error:
        return None, str(error)
    failed, words = answer_of(reply.get(worker))
    if failed:
        return None, f"{worker}: {words}"
    return RunStateData.model_validate(reply[worker]["result"]), ""


def artifact(router: Router, worker: str, agent: str, artifact_id: str) -> Tuple[Optional[Artifact], str]:
    """One artifact whole from its worker's evidence; or None and why."""
    try:
        reply = router.call("evidence", [worker], {"agent": agent, "artifact_id": artifact_id})
    except RoutingError as error:
        return None, str(error)
    failed, words = answer_of(reply.get(worker))
    if failed:
        return None, f"{worker}: {words}"
    return EvidenceResultData.model_validate(reply[worker]["result"]).artifact, ""


def digest_holds(item: Artifact) -> bool:
    """Whether the artifact's text is what its sha256 says (checked here, in the console)."""
    return hashlib.sha256(item.text.encode()).hexdigest() == item.sha256


@dataclass
class AgentRow:
    """One agent of one worker as the agents page shows it: its summary, today's budget, runs in flight."""

    agent: AgentSummary
    budget: Optional[AgentBudget]
    active: int
    changes: List[str]  # its tools that can change the network


def agents(router: Router) -> Listing:
    """Every agent of every alive hermes worker, with its worker's budgets and runs in flight."""
    try:
        listed, status = router.agents(), router.status()
    except RoutingError as error:
        return Listing(problems=[str(error)])
    listing = Listing()
    for worker, res in sorted(listed.items()):
        failed, words = answer_of(res)
        state = status.get(worker) or {}
        if failed or answer_of(state)[0]:
            listing.problems.append(f"{worker}: {words or answer_of(state)[1]}")
            continue
        health = WorkerStatus.model_validate(state["result"])
        for item in res["result"]:
            agent = AgentSummary.model_validate(item)
            active = sum(1 for run in health.active_runs if run.agent == agent.name)
            changes = sorted(name for name, tool in agent.tools.items() if (tool or {}).get("class") == "change")
            listing.items.append(AgentRow(agent, health.budgets.get(agent.name), active, changes))
    return listing


def audit_checks(router: Router) -> Listing:
    """``verify_audit`` of every alive hermes worker: each log's check, or why it could not be made."""
    try:
        replies = records.verify_audit(router)
    except RoutingError as error:
        return Listing(problems=[str(error)])
    listing = Listing()
    for worker, res in sorted(replies.items()):
        failed, words = answer_of(res)
        if failed:
            listing.problems.append(f"{worker}: {words}")
            continue
        listing.items.append(AuditVerifyData.model_validate(res["result"]))
    return listing


def audit_export(router: Router) -> Tuple[str, str]:
    """Every worker's audit log as JSON lines (``hermes audit export``), and a problem instead of it."""
    try:
        entries, _ = records.export(router)
    except RoutingError as error:
        return "", str(error)
    return "".join(entry.model_dump_json() + "\n" for entry in entries), ""


@dataclass
class ScheduleRow:
    """One schedule with its last runs, oldest first (the history strip)."""

    schedule: ScheduleInfo
    history: List[ScheduleRun]


def _schedule(router: Router, worker: str, agent: str, **kwargs: Any) -> Tuple[Optional[ScheduleResultData], str]:
    """One ``schedule`` action for ``agent`` on ``worker``: its answer, or None and why."""
    try:
        reply = router.call("schedule", [worker], {"agent": agent, **kwargs})
    except RoutingError as error:
        return None, str(error)
    failed, words = answer_of(reply.get(worker))
    if failed:
        return None, f"{worker}: {words}"
    return ScheduleResultData.model_validate(reply[worker]["result"]), ""


def schedules(router: Router) -> Listing:
    """Every schedule of every agent of every alive hermes worker, with its history strip."""
    try:
        listed = router.agents()
    except RoutingError as error:
        return Listing(problems=[str(error)])
    listing = Listing()
    for worker, res in sorted(listed.items()):
        failed, words = answer_of(res)
        if failed:
            listing.problems.append(f"{worker}: {words}")
            continue
        for agent in sorted(AgentSummary.model_validate(item).name for item in res["result"]):
            found, problem = _schedule(router, worker, agent, action="list")
            if found is None:
                listing.problems.append(f"{agent}: {problem}")
                continue
            for info in found.schedules:
                runs, problem = _schedule(
                    router, worker, agent, action="history", schedule_id=info.schedule_id, limit=HISTORY_SHOWN
                )
                listing.items.append(ScheduleRow(info, list(reversed(runs.history)) if runs else []))
                if problem:
                    listing.problems.append(f"{agent} {info.name}: {problem}")
    return listing


def pause_or_resume(router: Router, action: str, worker: str, agent: str, schedule_id: str) -> Tuple[bool, str]:
    """``schedule`` pause or resume of one schedule: (done, what the worker said)."""
    done, problem = _schedule(router, worker, agent, action=action, schedule_id=schedule_id)
    if done is None:
        return False, f"{worker} refused to {action} {schedule_id}: {problem}"
    return True, done.message or f"{action} {schedule_id} on {worker}"
