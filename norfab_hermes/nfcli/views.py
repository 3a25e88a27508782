"""
Renderings of hermes results for the ``nf#`` shell: tables of agents,
workers and sessions, and one session's conversation.
"""

from typing import Any, Dict, List, Optional, Tuple

from rich.console import Group, RenderableType
from rich.text import Text

from ..models import (
    AgentBudget,
    AgentSummary,
    ChannelStatus,
    SchedulerStatus,
    SessionDetails,
    SessionSummary,
    WorkerStatus,
)
from ..routing import Target
from .live import error_text, markdown
from .tables import CLIP, WRAP, short_time, table

TOOL_OUTPUT_CHARS = 2000  # tool messages shown in 'hermes session' are cut here
AGENT_STATE_STYLES = {"running": "green", "stopped": "yellow", "deleted": "dim"}  # anything else (invalid) is red


def failed(res: dict) -> Optional[Text]:
    if res.get("failed") or res.get("result") is None:
        return error_text(res.get("errors") or [f"no result: {res.get('status')}"])
    return None


# ------------------------------------------------------------------- views


def agents_view(replies: Dict[str, dict]) -> RenderableType:
    rows = []
    for worker, res in sorted(replies.items()):
        problem = failed(res)
        if problem:
            rows.append([worker, "", Text.assemble("no: ", problem), "", "", "", "", "", ""])
            continue
        for agent in (AgentSummary.model_validate(a) for a in res["result"]):
            if agent.available:
                available: Any = "yes"
            elif agent.state == "stopped" and not agent.error:
                available = Text("no: stopped", style="yellow")  # on purpose; 'hermes start' serves it again
            else:
                available = Text(f"no: {agent.error or 'unavailable'}", style="red")
            rows.append(
                [
                    worker,
                    agent.name,
                    available,
                    state_text(agent.state),
                    agent.owner,
                    agent.model,
                    agent.provider,
                    ", ".join(name for name, shown in agent.tools.items() if shown.get("class") == "change"),
                    agent.description,
                ]
            )
    # changes: the tools that can change the network (they always ask for approval); on a narrow
    # terminal it stays longest after the names: it is what an operator picks an agent by
    columns = ["worker", "agent", "available", "state", "owner", "model", "provider", "changes", "description"]
    return table(
        "hermes agents",
        columns,
        rows,
        drop=["provider", "owner", "model", "state", "description", "changes"],
        text={"available": WRAP, "description": CLIP, "changes": CLIP},
    )


def state_text(state: Optional[str]) -> Optional[Text]:
    """An agent's state, coloured: running, stopped, invalid or deleted."""
    return Text(state, style=AGENT_STATE_STYLES.get(state, "red")) if state else None


def status_view(replies: Dict[str, dict]) -> RenderableType:
    workers, errors, schedulers, channels, channel_errors = [], [], [], [], []
    runs: List[List[Any]] = []
    budgets: List[List[Any]] = []
    for worker, res in sorted(replies.items()):
        problem = failed(res)
        if problem:
            workers.append([worker, Text("no", style="red"), "", "", ""])
            errors.append(Text.assemble(f"{worker}: ", problem))
            continue
        status = WorkerStatus.model_validate(res["result"])
        agents = ", ".join(name if ok else f"{name} (unavailable)" for name, ok in sorted(status.agents.items()))
        ready = Text("yes") if status.ready else Text("no", style="red")
        workers.append(
            [worker, ready, agents, f"{len(status.active_runs)}/{status.max_concurrent_runs}", status.threads]
        )
        errors.extend(Text(f"{worker}: {error}", style="red") for error in status.errors)
        if status.identity:  # who may act: one line, yellow while any client can
            open_door = status.identity.startswith("no operators")
            errors.append(Text(f"{worker}: {status.identity}", style="yellow" if open_door else ""))
        runs.extend(
            [worker, run.run_id, run.agent, run.session_id, short_time(run.started), run.schedule_id]
            for run in status.active_runs
        )
        schedulers.extend(scheduler_rows(worker, status.scheduler))
        budgets.extend(budget_row(worker, agent, budget) for agent, budget in sorted(status.budgets.items()))
        rows, problems = channel_rows(worker, status.notify)
        channels.extend(rows)
        channel_errors.extend(problems)
    views: List[RenderableType] = [
        table(
            "hermes workers",
            ["worker", "ready", "agents", "runs", "threads"],
            workers,
            drop=["threads"],
            text={"agents": WRAP},
        ),
        *errors,  # each on lines of its own: a worker can have many, and they are long
    ]
    if runs:
        columns = ["worker", "run", "agent", "session", "started", "schedule"]
        views.append(table("active runs", columns, runs, drop=["schedule", "session", "started"]))
    if schedulers:
        columns = ["worker", "ticking", "last tick", "agent", "schedules", "queued", "next due", "overdue"]
        drop = ["last tick", "ticking", "queued"]
        views.append(table("schedulers", columns, schedulers, drop=drop, text={"overdue": WRAP}))
    if budgets:
        views.append(table("daily budgets (UTC day)", ["worker", "agent", "spent today", "used"], budgets))
    if channels:
        columns = ["worker", "channel", "health", "waiting", "sent", "dead"]
        views += [table("notification channels", columns, channels), *channel_errors]
    return Group(*views)


def channel_rows(worker: str, channels: Dict[str, ChannelStatus]) -> Tuple[List[List[Any]], List[Text]]:
    """A notification channel per row (whether it delivers, what waits in its outbox, its dead letters),
    and a line for each one's error, under the table: errors are long."""
    style = {"ok": "", "failing": "yellow", "not_running": "red"}
    rows, errors = [], []
    for name, channel in sorted(channels.items()):
        health = Text(channel.health, style=style[channel.health])
        dead = Text(str(channel.dead), style="red" if channel.dead else "")
        rows.append([worker, f"{name} ({channel.type})", health, channel.waiting, channel.sent, dead])
        if channel.error:
            errors.append(Text(f"{worker} {name}: {channel.error}", style=style[channel.health]))
    return rows, errors


def budget_row(worker: str, agent: str, budget: AgentBudget) -> List[Any]:
    """An agent's day: tokens and cost against its budgets, the share used coloured from 50 % on."""
    spent = [f"{budget.tokens}/{budget.daily_tokens} tokens" if budget.daily_tokens else f"{budget.tokens} tokens"]
    if budget.daily_cost_usd:
        spent.append(f"{budget.cost_usd:.2f}/{budget.daily_cost_usd:g} USD")
    style = "red" if budget.percent >= 90 else "yellow" if budget.percent >= 50 else ""
    return [worker, agent, ", ".join(spent), Text(f"{budget.percent:g} %", style=style)]


def scheduler_rows(worker: str, scheduler: SchedulerStatus) -> List[List[Any]]:
    """A worker's scheduler: one row per agent with schedules, or one row saying it has none."""
    ticking = Text("yes") if scheduler.ticking else Text("no", style="red")
    last_tick = short_time(scheduler.last_tick)
    rows = [
        [
            worker,
            ticking,
            last_tick,
            name,
            agent.schedules,
            Text(str(agent.queued), style="yellow" if agent.queued else ""),
            short_time(agent.next_due),
            Text(", ".join(agent.overdue), style="red"),
        ]
        for name, agent in sorted(scheduler.agents.items())
        if agent.schedules or agent.overdue
    ]
    return rows or [[worker, ticking, last_tick, "", 0, 0, "", ""]]


def sessions_view(target: Target, sessions: List[dict]) -> RenderableType:
    rows = []
    for session in (SessionSummary.model_validate(s) for s in sessions):
        rows.append(
            [
                session.session_id,
                session.title,
                session.source,
                short_time(session.last_active),
                session.message_count,
                session.preview,
            ]
        )
    return Group(
        table(
            f"sessions of agent '{target.agent}' on worker '{target.worker}'",
            ["session", "title", "source", "last active", "messages", "preview"],
            rows,
            drop=["source", "title", "messages"],
            text={"title": CLIP, "preview": CLIP},
        ),
        Text(f"continue one with: hermes chat {target.agent} session SESSION workers {target.worker}", style="dim"),
    )


def session_view(data: dict) -> RenderableType:
    session = SessionDetails.model_validate(data)
    parts: List[RenderableType] = [
        Text(
            f"session {session.session_id} | agent {session.agent} | worker {session.worker} | "
            f"title {session.title} | {session.message_count} messages | last active {short_time(session.last_active)}",
            style="bold",
        )
    ]
    for message in session.messages:
        parts.append(Text(f"\n{message.role} {short_time(message.timestamp)}", style="cyan"))
        for call in message.tool_calls:
            parts.append(Text(f"calls {call.get('name')} {call.get('arguments')}", style="dim"))
        content = message.content or ""
        if message.role == "tool":
            cut = content[:TOOL_OUTPUT_CHARS]
            parts.append(Text(cut + (" ... (cut)" if len(content) > len(cut) else ""), style="dim"))
        elif message.role == "assistant":
            parts.append(markdown(content))
        elif content:
            parts.append(Text(content))
    return Group(*parts)
