"""
Background runs and the approval inbox from the ``nf#`` shell:
``hermes invoke ... background``, ``hermes run AGENT RUN_ID (follow)``,
``hermes approvals``, ``hermes approve ID`` and ``hermes deny ID``.

A background run (``start_run``) answers at once with its run and session
ids; ``hermes run`` reads its state, events and reply with ``get_run`` from
the worker that ran it, and ``follow`` polls until it ends. A run nobody is
attached to (background, scheduled, REST or MCP) parks an approval-gated tool
call in its worker's inbox when its agent sets ``approval_timeout``: an
approval id is known only on that worker, so ``approve`` and ``deny`` ask
every selected worker and the one that knows it answers.
"""

import json
import time
from datetime import datetime, timezone
from typing import Any, ClassVar, Dict, List, Optional

from pydantic import Field
from rich.console import Console, Group, RenderableType
from rich.text import Text

from ..models import ApprovalInfo, RunEvent, RunStateData
from ..routing import Router, Target
from .changes import preview_view
from .common import NoteOption, WorkersOption, as_str, guarded, hint, misparsed, router
from .live import CtrlC, error_text, event_line, reply_view
from .picle_compat import Maybe
from .tables import WRAP, clock, parse_time, table
from .views import failed

USAGE = """  hermes invoke AGENT "INSTRUCTIONS" background (session SESSION) (case-id CASE) (workers WORKER)
    (timeout SECONDS)
  hermes run AGENT RUN_ID (workers WORKER) (follow)
  hermes approvals (workers SELECTOR)
  hermes approve APPROVAL_ID (note "WHY") (workers SELECTOR)
  hermes deny APPROVAL_ID (note "WHY") (workers SELECTOR)
    background answers at once with the run's ids; follow shows its events until it ends (Ctrl+C stops
    following, not the run); approve and deny ask every selected worker, the run's own worker answers."""

FOLLOW_POLL = 0.5  # seconds between get_run calls while following
KEY_POLL = 0.1  # seconds between checks for a Ctrl+C key while following
STATE_STYLES = {"running": "cyan", "queued": "cyan", "waiting_for_approval": "yellow"}
APPROVAL_STYLES = {"pending": "yellow", "approved": "green"}  # denied and expired are red
INBOX_COLUMNS = ["worker", "approval", "agent", "run", "tool", "target", "arguments", "approvers", "expires"]
INBOX_DROP = ["worker", "target", "run", "agent"]  # approve and deny need only the approval id
RUN_APPROVAL_COLUMNS = ["approval", "tool", "target", "arguments", "state", "decided by", "note"]


def usage(problem: str) -> Text:
    return error_text([problem, "usage:", USAGE])


# ---------------------------------------------------------------- commands


class HermesApprovalsCommand(WorkersOption):
    @staticmethod
    def run(workers: Optional[str] = None, **kwargs: Any) -> RenderableType:
        return misparsed(kwargs) or guarded(lambda: inbox(router(), as_str(workers)))


class HermesApproveCommand(NoteOption):
    """``ID (note "WHY") (workers SELECTOR)``; subclasses change ACTION, the decision task."""

    ACTION: ClassVar[str] = "approve"
    note: Maybe[str] = Field(
        None,
        description="Why, kept in the run's record (a denial's note is told to the agent)",
        json_schema_extra={"presence": True},
    )

    @classmethod
    def run(cls, approval_id: str, note: Any = None, workers: Optional[str] = None, **kwargs: Any) -> RenderableType:
        if refused := misparsed(kwargs):
            return refused
        if note is True:
            return usage(f'note takes the reason, quoted: hermes {cls.ACTION} ID note "WHY"')
        why = " ".join(map(str, note)) if isinstance(note, list) else as_str(note)
        ref, where = str(approval_id), as_str(workers)
        return guarded(lambda: decide(router(), cls.ACTION, ref, why, where))


class HermesDenyCommand(HermesApproveCommand):
    ACTION: ClassVar[str] = "deny"


def approval_verb(description: str) -> Any:
    """The field of approve and deny: the approval id, then the command's options (a PICLE key dict)."""
    return Field(
        None,
        description=description,
        json_schema_extra={"pkey": "approval_id", "pkey_description": "Approval id, from 'hermes approvals'"},
    )


def start(
    routes: Router,
    agent: str,
    instructions: str,
    session: Optional[str],
    workers: Optional[str],
    timeout: Any,
    case_id: Optional[str] = None,
) -> RenderableType:
    """``hermes invoke AGENT "..." background``: start_run on the agent's (session's) worker, its ids at once."""
    target = routes.resolve(agent, workers, session)
    kwargs: Dict[str, Any] = {"instructions": instructions, "session_id": session}
    if timeout:
        kwargs["run_timeout"] = timeout
    if case_id:
        kwargs["case_id"] = case_id
    res = routes.one("start_run", target, kwargs)
    problem = failed(res)
    if problem:
        return problem
    data = RunStateData.model_validate(res["result"])
    parts: List[RenderableType] = [
        Text(
            f"run {data.run_id} started in the background: agent '{data.agent}' on worker '{data.worker}', "
            f"session {data.session_id or '(not known yet, see hermes run)'}, "
            + (f"case {data.case_id}, " if data.case_id else "")
            + data.state
        ),
        hint(f"follow it: hermes run {data.agent} {data.run_id} workers {data.worker} follow"),
    ]
    if data.session_id:
        parts.append(
            hint(
                f'continue the session: hermes invoke {data.agent} "..." session {data.session_id} workers {data.worker}'
            )
        )
    return Group(*parts)


def show(routes: Router, agent: str, run_id: str, workers: Optional[str], follow: bool) -> RenderableType:
    """``hermes run AGENT RUN_ID (follow)``."""
    target, res = routes.run_state(agent, run_id, workers)
    problem = failed(res)
    if problem:
        return problem
    data = RunStateData.model_validate(res["result"])
    if follow and data.state != "finished":
        return follow_run(routes, target, data)
    parts: List[RenderableType] = [header(data), *[run_event_line(e) for e in data.events]]
    if data.approvals:
        parts.append(run_approvals(data))
    if data.state == "finished":
        parts.append(ending(target, data))
    else:
        parts.append(hint(f"follow it: hermes run {data.agent} {data.run_id} workers {data.worker} follow"))
    return Group(*parts)


def follow_run(routes: Router, target: Target, data: RunStateData) -> RenderableType:
    """Print the run's events as they come, every FOLLOW_POLL seconds, until it ends; Ctrl+C stops following."""
    console = Console()
    console.print(header(data))
    announced: set = set()
    try:
        with CtrlC() as ctrl_c:
            while True:
                for event in data.events:
                    console.print(run_event_line(event))
                for approval in data.approvals:
                    if approval.state == "pending" and approval.approval_id not in announced:
                        announced.add(approval.approval_id)
                        console.print(Group(waiting_line(approval), *previews([approval])))
                if data.state == "finished":
                    return ending(target, data)
                deadline = time.time() + FOLLOW_POLL
                while time.time() < deadline:
                    if ctrl_c.pressed():
                        raise KeyboardInterrupt  # the key and the signal are handled alike
                    time.sleep(KEY_POLL)
                res = routes.one("get_run", target, {"run_id": data.run_id, "offset": data.next_offset})
                problem = failed(res)
                if problem:
                    return problem
                data = RunStateData.model_validate(res["result"])
    except KeyboardInterrupt:
        return Text(
            f"stopped following; run {data.run_id} goes on on worker '{target.worker}': "
            f"hermes run {target.agent} {data.run_id} workers {target.worker} (follow)",
            style="yellow",
        )


def inbox(routes: Router, workers: Optional[str]) -> RenderableType:
    """``hermes approvals``: the pending approvals of every selected worker."""
    replies = routes.call("get_approvals", routes.select(workers))
    pending = {
        w: [ApprovalInfo.model_validate(item) for item in res["result"]]
        for w, res in replies.items()
        if not failed(res)
    }
    restricted = any(a.approvers for approvals in pending.values() for a in approvals)
    columns = [c for c in INBOX_COLUMNS if restricted or c != "approvers"]  # a column only when some are restricted
    rows: List[List[Any]] = []
    for worker, res in sorted(replies.items()):
        problem = failed(res)
        if problem:  # in the arguments column: the worker column may be dropped
            rows.append([Text.assemble(f"{worker}: ", problem) if c == "arguments" else "" for c in columns])
            continue
        for a in pending[worker]:
            cells = [worker, a.approval_id, a.agent, a.run_id, a.tool, a.target, arguments(a)]
            cells += [", ".join(a.approvers) or "any client"] if restricted else []
            rows.append(cells + [expires(a.expires)])
    text = {"arguments": WRAP, "approvers": WRAP}
    parts: List[RenderableType] = [
        table("approvals waiting for an operator", columns, rows, drop=INBOX_DROP, text=text)
    ]
    for worker in sorted(pending):
        parts.extend(previews(pending[worker]))
    if any(pending.values()):
        parts.append(hint('decide one: hermes approve APPROVAL (note "WHY") or hermes deny APPROVAL (note "WHY")'))
        parts.append(hint("see its run: hermes run AGENT RUN workers WORKER"))
    return Group(*parts)


def decide(
    routes: Router, action: str, approval_id: str, note: Optional[str], workers: Optional[str]
) -> RenderableType:
    """``hermes approve|deny ID``: the answer of the worker that knows the id."""
    parts: List[RenderableType] = []
    for worker, res in sorted(routes.decide(action, approval_id, note, workers).items()):
        problem = failed(res)
        if problem:
            parts.append(problem)
            continue
        a = ApprovalInfo.model_validate(res["result"])
        parts.append(
            Text.assemble(
                f"approval {a.approval_id} of run {a.run_id} (agent '{a.agent}', worker '{worker}'): ",
                (a.state, APPROVAL_STYLES.get(a.state, "red")),
                f" by {a.decided_by or 'unknown'} at {a.decided or '?'}",
            )
        )
        parts.append(Text(f"{a.tool} ({a.target}) with {arguments(a)}" + (f"; note: {a.note}" if a.note else "")))
        parts.append(hint(f"follow the run: hermes run {a.agent} {a.run_id} workers {worker} follow"))
    return Group(*parts)


# ------------------------------------------------------------------- views


def header(data: RunStateData) -> Text:
    state = data.state + (f": {data.stop_reason}" if data.stop_reason else "")
    style = (
        ("dim" if data.stop_reason == "completed" else "yellow")
        if data.state == "finished"
        else STATE_STYLES.get(data.state, "")
    )
    return Text.assemble(
        (f"run {data.run_id} | agent {data.agent} | worker {data.worker} | ", "bold"),
        (state, style),
        f" | session {data.session_id or '(not known yet)'} | started {clock(data.started)}",
        f" | case {data.case_id}" if data.case_id else "",
    )


def run_event_line(event: RunEvent) -> Text:
    return event_line(clock(event.time), event.severity, event.message)


def waiting_line(a: ApprovalInfo) -> Text:
    return Text(
        f"approval {a.approval_id} waits for an operator until {clock(a.expires)}: {a.tool} ({a.target}) with "
        f'{arguments(a)}; decide it: hermes approve {a.approval_id} (note "WHY") or hermes deny {a.approval_id}',
        style="yellow",
    )


def run_approvals(data: RunStateData) -> RenderableType:
    rows = [
        [
            a.approval_id,
            a.tool,
            a.target,
            arguments(a),
            Text(a.state, style=APPROVAL_STYLES.get(a.state, "red")),
            a.decided_by,
            a.note,
        ]
        for a in data.approvals
    ]
    text = {"arguments": WRAP, "note": WRAP}
    parts: List[RenderableType] = [
        table(f"approvals of run {data.run_id}", RUN_APPROVAL_COLUMNS, rows, drop=["decided by", "target"], text=text)
    ]
    parts.extend(previews(a for a in data.approvals if a.state == "pending"))
    pending = [a.approval_id for a in data.approvals if a.state == "pending"]
    if pending:
        parts.append(hint(f'decide it: hermes approve {pending[0]} (note "WHY") or hermes deny {pending[0]}'))
    return Group(*parts)


def ending(target: Target, data: RunStateData) -> RenderableType:
    """A finished run: its reply as invoke shows it, or why it has none."""
    if data.result is None:
        return error_text([f"run {data.run_id} ended without a reply: {data.stop_reason or 'failed'} (see its events)"])
    step = None
    if data.session_id:
        step = f'continue with: hermes invoke {data.agent} "..." session {data.session_id} workers {target.worker}'
    return reply_view({"result": data.result.model_dump()}, step)


def previews(approvals: Any) -> List[RenderableType]:
    """What each change would do, per device, under the table that lists it."""
    return [
        preview_view(a.preview, f"approval {a.approval_id}: change {a.change_digest} on {', '.join(a.devices)}")
        for a in approvals
        if a.preview
    ]


def arguments(approval: ApprovalInfo) -> str:
    return json.dumps(approval.arguments, sort_keys=True, default=str)


def expires(iso: str) -> str:
    """How long an approval still waits: 'in 4m 10s', or 'expired'."""
    moment = parse_time(iso)
    if moment is None:
        return iso
    left = int((moment - datetime.now(timezone.utc)).total_seconds())
    if left <= 0:
        return "expired"
    return f"in {left // 60}m {left % 60}s" if left >= 60 else f"in {left}s"
