"""
One agent turn from the ``nf#`` shell: ``hermes invoke AGENT "TEXT"`` shown
live as it runs, ``hermes command AGENT "/COMMAND"`` (one of the agent's
native commands) and ``hermes interrupt AGENT run RUN_ID``. A background
invoke is in :mod:`.runs`, a chat of many turns in :mod:`.chat`.
"""

from typing import Any, Optional

from norfab.clients.nfcli_shell.common import run_future_job
from pydantic import ConfigDict, Field, StrictStr
from rich.console import Console, Group, RenderableType
from rich.text import Text

from ..models import CommandResultData
from ..routing import COMMAND_JOB_TIMEOUT
from .common import WorkersOption, as_str, guarded, misparsed, router
from .live import error_text, job_event_line, markdown, own_job_event, reply_view, run_turn
from .views import failed


class HermesInterruptCommand(WorkersOption):
    model_config = ConfigDict(populate_by_name=True)
    run_id: Optional[StrictStr] = Field(
        None, alias="run", description="Run id, from the invoke's output or 'hermes status'"
    )

    @staticmethod
    def run(agent: str, run_id: Optional[str] = None, workers: Optional[str] = None, **kwargs: Any) -> RenderableType:
        if refused := misparsed(kwargs):
            return refused
        if not run_id:
            return error_text(["usage: hermes interrupt AGENT run RUN_ID (workers WORKER)"])
        run_id = str(run_id)

        def render() -> RenderableType:
            routes = router()
            target = routes.run_owner(str(agent), run_id, as_str(workers))
            res = routes.one("interrupt", target, {"run_id": run_id})
            return failed(res) or Text(
                f"run {run_id} of agent '{target.agent}' on worker '{target.worker}' is stopping; "
                "its invoke returns with stop_reason 'interrupted'"
            )

        return guarded(render)


def invoke(
    agent: str,
    instructions: str,
    session: Optional[str],
    workers: Optional[str],
    timeout: Any,
    case_id: Optional[str] = None,
) -> Any:
    """``hermes invoke AGENT "INSTRUCTIONS" (case-id CASE)``: the job's events as they come, then the reply."""
    routes = router()
    target = routes.resolve(agent, workers, session)
    console = Console()
    case = f", case {case_id}" if case_id else ""
    console.print(
        Text(f"invoking agent '{target.agent}' on worker '{target.worker}', session {session or 'new'}{case}")
    )

    def show(event: dict) -> None:
        if not own_job_event(event):  # the header above says the job started; the reply says it ended
            console.print(job_event_line(event))

    turn = run_turn(routes, target, instructions, session, timeout, show, console, case_id)
    if turn is None:  # the operator stopped waiting
        return None
    session_id = (turn.result.get("result") or {}).get("session_id")
    hint = None
    if session_id and not turn.result.get("failed"):
        hint = f'continue with: hermes invoke {target.agent} "..." session {session_id} workers {target.worker}'
    return reply_view(turn.result, hint, turn.streamed)


def command(agent: str, line: str, session: Optional[str], workers: Optional[str]) -> RenderableType:
    """``hermes command AGENT "/COMMAND"``: the native command's answer."""
    target = router().resolve(agent, workers, session)
    reply = run_future_job(
        "hermes",
        "command",
        workers=target.worker,
        kwargs={"agent": target.agent, "command": line, "session_id": session},
        timeout=COMMAND_JOB_TIMEOUT,
    )
    res = (reply or {}).get(target.worker)
    if not res:
        return error_text([f"hermes command on worker '{target.worker}' returned no result"])
    if problem := failed(res):
        return problem
    data = CommandResultData.model_validate(res["result"])
    return Group(
        markdown(data.response or "(no answer)"),
        Text(f"{data.command} | agent {data.agent} | worker {data.worker} | session {data.session_id}", style="dim"),
    )
