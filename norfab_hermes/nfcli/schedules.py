"""
Scheduled checks from the ``nf#`` shell: ``hermes schedules``, ``pause``,
``resume``, ``history`` and ``hermes schedule AGENT add|update|run|remove``.

Every command resolves AGENT to one worker the way ``invoke`` does (an agent
on several workers needs ``workers``) and runs that worker's ``schedule``
task: an agent's schedules live in its store on its own worker. ``remove``
asks first when nfcli reads a terminal.
"""

import re
from typing import Any, ClassVar, Dict, List, Optional, Union

from pydantic import ConfigDict, Field, StrictInt
from rich.console import Group, RenderableType
from rich.text import Text

from ..models import ScheduleInfo, ScheduleResultData, ScheduleRun
from ..routing import Router, Target
from .common import WorkersOption, as_str, confirm, guarded, hint, misparsed, on_terminal, router
from .live import error_text
from .picle_compat import Maybe
from .tables import WRAP, short_time, short_times, table
from .views import failed

USAGE = """  hermes schedules AGENT (workers WORKER)
  hermes pause AGENT schedule ID (workers WORKER)
  hermes resume AGENT schedule ID (workers WORKER)
  hermes history AGENT schedule ID (limit N) (workers WORKER)
  hermes schedule AGENT add "SCHEDULE" "PROMPT" name NAME (repeat N) (workers WORKER)
  hermes schedule AGENT update ID (prompt "PROMPT") (every "SCHEDULE") (name NAME) (repeat N) (workers WORKER)
  hermes schedule AGENT run ID (workers WORKER)
  hermes schedule AGENT remove ID (workers WORKER)
    SCHEDULE: "every 5m", a cron expression "*/5 * * * *" (a 6th field is seconds), or an ISO time
    "2026-12-24T09:00" for one run; in update, every "10m" means "every 10m". ID: the schedule's id or name."""

# the actions of 'hermes schedule AGENT ...': 'add' creates ('create' is the agent lifecycle command)
SCHEDULE_ACTIONS = ("add", "update", "run", "remove")
DEFINITION_OPTIONS = ("name", "prompt", "every", "repeat")
COLUMNS = ["id", "name", "schedule", "state", "next run", "last run", "last status", "runs", "origin"]
HISTORY_COLUMNS = ["status", "due", "started", "duration", "finding", "session"]
FINDING_CHARS = 120  # of a finding's first line shown in history
BARE_DURATION = re.compile(r"^\d+\s*[a-z]+$", re.IGNORECASE)  # "10m", "2h": alone, Hermes would run it once
STATUS_STYLES = {
    "ok": "green",
    "recovered": "green",
    "missed": "yellow",
    "queued": "yellow",
    "interrupted": "yellow",
}  # anything else is red
NEXT_STEP = {
    "create": "run it now: hermes schedule {agent} run {ref} workers {worker}",
    "pause": "resume it: hermes resume {agent} schedule {ref} workers {worker}",
    "run": "its finding, once the run ends: hermes history {agent} schedule {ref} workers {worker}",
}


def usage(problem: str) -> Text:
    return error_text([problem, "usage:", USAGE])


def ask(routes: Router, target: Target, action: str, **kwargs: Any) -> Union[Text, ScheduleResultData]:
    """Run the schedule task on the target's worker: its data, or its errors as red text."""
    res = routes.one("schedule", target, {"action": action, **{k: v for k, v in kwargs.items() if v is not None}})
    return failed(res) or ScheduleResultData.model_validate(res["result"])


# ---------------------------------------------------------------- commands


class HermesSchedulesCommand(WorkersOption):
    @staticmethod
    def run(agent: str, workers: Optional[str] = None, **kwargs: Any) -> RenderableType:
        return misparsed(kwargs) or guarded(lambda: show(router(), str(agent), as_str(workers)))


class HermesPauseCommand(WorkersOption):
    """``AGENT schedule ID``; subclasses change ACTION, the schedule task's action."""

    ACTION: ClassVar[str] = "pause"
    model_config = ConfigDict(populate_by_name=True)
    # plain str: PICLE leaves such values alone (an id of digits keeps its leading zeros)
    schedule_id: Maybe[str] = Field(
        None, alias="schedule", description="Schedule id or name, from 'hermes schedules AGENT'"
    )

    @classmethod
    def run(
        cls, agent: str, schedule_id: Any = None, workers: Optional[str] = None, limit: Any = None, **kwargs: Any
    ) -> RenderableType:
        if refused := misparsed(kwargs):
            return refused
        if not schedule_id:
            return usage(f"{cls.ACTION} takes the schedule: hermes {cls.ACTION} AGENT schedule ID")
        ref, where = str(schedule_id), as_str(workers)
        return guarded(lambda: act(router(), str(agent), where, cls.ACTION, ref, limit=limit))


class HermesResumeCommand(HermesPauseCommand):
    ACTION: ClassVar[str] = "resume"


class HermesHistoryCommand(HermesPauseCommand):
    ACTION: ClassVar[str] = "history"
    limit: Optional[StrictInt] = Field(None, description="Newest runs to show (default 20)")


def show(routes: Router, agent: str, workers: Optional[str]) -> RenderableType:
    """``hermes schedules AGENT``."""
    target = routes.resolve(agent, workers)
    data = ask(routes, target, "list")
    if isinstance(data, Text):
        return data
    step = (
        f"runs of one: hermes history {target.agent} schedule ID workers {target.worker}"
        if data.schedules
        else f'add one: hermes schedule {target.agent} add "every 5m" "PROMPT" name NAME workers {target.worker}'
    )
    return Group(schedules_table(target, data.schedules), hint(step))


def act(routes: Router, agent: str, workers: Optional[str], action: str, ref: str, **kwargs: Any) -> RenderableType:
    """``hermes pause|resume|history AGENT schedule ID`` and ``hermes schedule AGENT run|update ID``."""
    target = routes.resolve(agent, workers)
    data = ask(routes, target, action, schedule_id=ref, **kwargs)
    if isinstance(data, Text):
        return data
    return history_view(target, data) if action == "history" else action_view(target, data)


def schedule_command(
    app: Any, routes: Router, args: List[str], options: Dict[str, Any], workers: Optional[str]
) -> RenderableType:
    """``hermes schedule AGENT ACTION ...``: ``args`` are the verb's values, ``options`` name, prompt, every, repeat."""
    if len(args) < 2 or args[1] not in SCHEDULE_ACTIONS:
        return usage(f"hermes schedule takes an agent and one of {', '.join(SCHEDULE_ACTIONS)}")
    agent, action, rest = args[0], args[1], args[2:]
    given = {key: value for key, value in options.items() if value is not None}
    text = {key: str(value) for key, value in given.items() if key != "repeat"}
    if action == "add":
        if len(rest) < 2 or "name" not in given or "prompt" in given or "every" in given:
            return usage(
                'add takes the schedule and the prompt, each quoted, and a name: add "every 5m" "PROMPT" name NAME'
            )
        definition = {
            "schedule": rest[0],
            "prompt": " ".join(rest[1:]),
            "name": text["name"],
            "repeat": given.get("repeat"),
        }
        target = routes.resolve(agent, workers)
        data = ask(routes, target, "create", definition={k: v for k, v in definition.items() if v is not None})
        return data if isinstance(data, Text) else action_view(target, data)
    if len(rest) != 1:
        return usage(f"{action} takes one schedule id or name (quote a name with spaces)")
    if action == "update":
        if not given:
            return usage(f"update takes what to change: {', '.join(DEFINITION_OPTIONS)}")
        definition = {
            "name": text.get("name"),
            "prompt": text.get("prompt"),
            "schedule": every(text["every"]) if "every" in text else None,
            "repeat": given.get("repeat"),
        }
        return act(
            routes, agent, workers, "update", rest[0], definition={k: v for k, v in definition.items() if v is not None}
        )
    if given:
        return usage(f"{action} takes no {', '.join(given)}; those are for add and update")
    if action == "remove":
        return remove(app, routes, agent, workers, rest[0])
    return act(routes, agent, workers, action, rest[0])


def remove(app: Any, routes: Router, agent: str, workers: Optional[str], ref: str) -> RenderableType:
    """Remove a schedule with its history; on a terminal, only after a yes."""
    target = routes.resolve(agent, workers)
    if on_terminal():
        found = ask(routes, target, "history", schedule_id=ref, limit=1)  # the worker's own id-or-name lookup
        if isinstance(found, Text):
            return found
        info = found.schedules[0]
        question = (
            f"remove schedule '{info.name}' ({info.schedule_id}, {info.runs} runs) of agent '{target.agent}' "
            f"on worker '{target.worker}' with its history? [y/N] "
        )
        if not confirm(app, question):
            return Text("nothing removed", style="yellow")
        ref = info.schedule_id  # exactly the schedule confirmed
    data = ask(routes, target, "remove", schedule_id=ref)
    return data if isinstance(data, Text) else action_view(target, data)


def every(value: str) -> str:
    """The schedule of ``every VALUE``: a bare duration recurs ("10m" -> "every 10m"), anything else as given."""
    return f"every {value}" if BARE_DURATION.match(value.strip()) else value


# ------------------------------------------------------------------- views


def schedules_table(target: Target, schedules: List[ScheduleInfo]) -> RenderableType:
    rows = [
        [
            s.schedule_id,
            s.name,
            s.schedule,
            Text(s.state, style="yellow" if s.state == "paused" else ""),
            short_time(s.next_run),
            short_time(s.last_run),
            status_text(s.last_status),
            f"{s.runs}/{s.repeat}" if s.repeat else s.runs,
            s.origin,
        ]
        for s in schedules
    ]
    title = f"schedules of agent '{target.agent}' on worker '{target.worker}'"
    return table(title, COLUMNS, rows, drop=["origin", "last run", "last status", "runs"], text={"schedule": WRAP})


def action_view(target: Target, data: ScheduleResultData) -> RenderableType:
    parts: List[RenderableType] = [Text(short_times(data.message))]
    if data.schedules:
        parts.append(schedules_table(target, data.schedules))
        step = NEXT_STEP.get(data.action)
        if step:
            parts.append(hint(step.format(agent=target.agent, ref=data.schedules[0].schedule_id, worker=target.worker)))
    return Group(*parts)


def history_view(target: Target, data: ScheduleResultData) -> RenderableType:
    info = data.schedules[0]
    rows = [
        [
            status_text(run.status),
            short_time(run.due),
            short_time(run.started),
            f"{run.duration:.1f}s" if run.duration is not None else None,
            finding(run),
            run.session_id,
        ]
        for run in data.history
    ]
    title = f"runs of schedule '{info.name}' ({info.schedule_id}, {info.state}, next run {short_time(info.next_run) or 'none'}), newest first"
    parts: List[RenderableType] = [
        table(title, HISTORY_COLUMNS, rows, drop=["due", "duration", "started"], text={"finding": WRAP})
    ]
    if any(run.session_id for run in data.history):
        parts.append(hint(f"read a whole finding: hermes session {target.agent} SESSION workers {target.worker}"))
    return Group(*parts)


def status_text(status: Optional[str]) -> Optional[Text]:
    return Text(status, style=STATUS_STYLES.get(status, "red")) if status else None


def finding(run: ScheduleRun) -> str:
    """The first line of what a run found; a missed or failed run's note or warnings when it found nothing."""
    text = run.response.strip() or run.note or "; ".join(run.warnings)
    lines = text.splitlines() or [""]
    line = lines[0][:FINDING_CHARS]
    more = len(lines) > 1 or len(lines[0]) > FINDING_CHARS or run.truncated
    return ("(silent) " if run.silent else "") + line + (" ..." if more else "")
