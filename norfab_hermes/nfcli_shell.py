"""
``nf# hermes ...``: the hermes command tree of NorFab's nfcli shell (PICLE).

Mounted through the NorFab inventory::

    plugins:
      hermes:
        nfcli:
          mount_path: hermes
          shell_model: "norfab_hermes.nfcli_shell:HermesShell"

PICLE has no positional arguments, so verbs that take an agent name and free
text (``invoke AGENT "TEXT"``, ``session AGENT ID``, ``command AGENT "/usage"``,
``chat AGENT``, ``schedule AGENT ACTION ...``, ``run AGENT RUN_ID``) are fields
whose values are those positionals, with their options (``session``,
``workers``, ``timeout``, ``background``, ``follow``, ``name``, ``prompt``,
``every``, ``repeat``) on the same model; agent-only verbs (``sessions AGENT``,
``interrupt AGENT``, ``schedules``, ``pause``, ``resume``, ``history``, and the
lifecycle verbs ``create``, ``clone``, ``stop``, ``start``, ``restart``,
``delete`` of :mod:`.nfcli.lifecycle`, ``reset-breaker``) and the id verbs
``approve ID``, ``deny ID`` (:mod:`.nfcli.runs`) and ``acknowledge ID``
(:mod:`.nfcli.changes`) are PICLE key dicts; ``runs`` and ``audit
export|verify`` (:mod:`.nfcli.records`) are command models. An agent name equal
to, or a prefix of, a ``hermes`` keyword must be quoted, and so should
instructions. ``run`` is also an action of ``schedule``: ``schedule AGENT run
ID`` arrives as ``schedule`` and ``run`` values and is put back together.
Importing this module fits two PICLE behaviours to free text (see
:mod:`.nfcli.picle_compat`): a ``?`` inside quotes is text, and ``history
AGENT schedule ID`` works inside the ``nf[hermes]#`` subshell too.

Only ``models`` and ``routing`` (plus the shell's own modules) are imported:
NorFab's task registry is process-global, so the worker module and Hermes
must stay out of the client process.
"""

from typing import Any, ClassVar, Dict, List, Optional

from norfab.clients.nfcli_shell.common import run_future_job
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr, field_validator
from rich.console import Console, Group, RenderableType
from rich.text import Text

from .models import CommandResultData
from .nfcli import carryover, lifecycle, picle_compat, records, runs, schedules
from .nfcli import changes as change_views
from .nfcli.chat import Chat, pick_agent
from .nfcli.common import WorkersOption, agent_names, agent_verb, as_str, guarded, misparsed, positionals, router
from .nfcli.live import error_text, job_event_line, markdown, own_job_event, reply_view, run_turn
from .nfcli.views import agents_view, failed, session_view, sessions_view, status_view
from .routing import COMMAND_JOB_TIMEOUT, Target

picle_compat.install()  # the plugin seam hands no App: PICLE's class learns quoted '?' and subshell history

# ---------------------------------------------------------------- commands


class HermesAgentsCommand(WorkersOption):
    @staticmethod
    def run(workers: Optional[str] = None, **kwargs: Any) -> RenderableType:
        return misparsed(kwargs) or guarded(lambda: agents_view(router().agents(as_str(workers))))


class HermesStatusCommand(WorkersOption):
    @staticmethod
    def run(workers: Optional[str] = None, **kwargs: Any) -> RenderableType:
        def render() -> RenderableType:
            replies = router().status(as_str(workers))
            return Group(status_view(replies), *change_views.envelope_views(change_views.envelopes(replies)))

        return misparsed(kwargs) or guarded(render)


class HermesSessionsCommand(WorkersOption):
    limit: Optional[StrictInt] = Field(None, description="Newest sessions to list (default 20)")

    @staticmethod
    def run(agent: str, workers: Optional[str] = None, limit: Optional[int] = None, **kwargs: Any) -> RenderableType:
        def render() -> RenderableType:
            routes = router()
            target = routes.resolve(str(agent), as_str(workers))
            res = routes.one("get_sessions", target, {"limit": limit or 20})
            return failed(res) or sessions_view(target, res["result"])

        return misparsed(kwargs) or guarded(render)


class HermesInterruptCommand(WorkersOption):
    model_config = ConfigDict(populate_by_name=True)
    run_id: Optional[StrictStr] = Field(
        None, alias="run", description="Run id, from the invoke's output or 'hermes status'"
    )

    @staticmethod
    def run(agent: str, run_id: Optional[str] = None, workers: Optional[str] = None, **kwargs: Any) -> RenderableType:
        if misparsed(kwargs):
            return misparsed(kwargs)
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


class HermesSchedulesCommand(WorkersOption):
    @staticmethod
    def run(agent: str, workers: Optional[str] = None, **kwargs: Any) -> RenderableType:
        return misparsed(kwargs) or guarded(lambda: schedules.show(router(), str(agent), as_str(workers)))


class HermesPauseCommand(WorkersOption):
    """``AGENT schedule ID``; subclasses change ACTION, the schedule task's action."""

    ACTION: ClassVar[str] = "pause"
    model_config = ConfigDict(populate_by_name=True)
    # plain str: PICLE leaves such values alone (an id of digits keeps its leading zeros)
    schedule_id: str = Field(None, alias="schedule", description="Schedule id or name, from 'hermes schedules AGENT'")

    @classmethod
    def run(
        cls, agent: str, schedule_id: Any = None, workers: Optional[str] = None, limit: Any = None, **kwargs: Any
    ) -> RenderableType:
        if misparsed(kwargs):
            return misparsed(kwargs)
        if not schedule_id:
            return schedules.usage(f"{cls.ACTION} takes the schedule: hermes {cls.ACTION} AGENT schedule ID")
        ref, where = str(schedule_id), as_str(workers)
        return guarded(lambda: schedules.act(router(), str(agent), where, cls.ACTION, ref, limit=limit))


class HermesResumeCommand(HermesPauseCommand):
    ACTION: ClassVar[str] = "resume"


class HermesHistoryCommand(HermesPauseCommand):
    ACTION: ClassVar[str] = "history"
    limit: Optional[StrictInt] = Field(None, description="Newest runs to show (default 20)")


USAGE = (
    """usage:
  hermes agents (workers SELECTOR)
  hermes status (workers SELECTOR)
  hermes invoke AGENT "INSTRUCTIONS" (session SESSION) (workers WORKER) (timeout SECONDS)
  hermes chat (AGENT) (session SESSION) (workers WORKER) (timeout SECONDS)
  hermes sessions AGENT (workers WORKER)
  hermes session AGENT SESSION (workers WORKER)
  hermes interrupt AGENT run RUN_ID (workers WORKER)
  hermes command AGENT "/COMMAND" (session SESSION) (workers WORKER)
"""
    + runs.USAGE
    + "\n"
    + records.USAGE
    + "\n"
    + change_views.USAGE
    + "\n"
    + lifecycle.USAGE
    + "\n"
    + schedules.USAGE
    + "\n"
    + carryover.USAGE
)


class HermesShell(BaseModel):
    """The ``hermes`` commands: agents and their lifecycle, sessions, runs, approvals, changes and scheduled checks."""

    model_config = ConfigDict(populate_by_name=True)

    agents: HermesAgentsCommand = Field(None, description="List agents of hermes workers")
    status: HermesStatusCommand = Field(
        None, description="Show hermes workers: readiness, agents, active runs, schedulers"
    )
    invoke: Any = Field(None, description='AGENT "INSTRUCTIONS" - run one agent turn')
    chat: Any = Field(
        None, description="AGENT - chat with an agent; without AGENT pick one", json_schema_extra={"presence": True}
    )
    sessions: Dict[StrictStr, HermesSessionsCommand] = agent_verb("List an agent's sessions")
    session: Any = Field(
        None, description="AGENT SESSION - show a session; with invoke, chat or command: the session to continue"
    )
    interrupt: Dict[StrictStr, HermesInterruptCommand] = agent_verb("Stop an agent's running turn")
    command: Any = Field(None, description='AGENT "/COMMAND" - run a native command, e.g. "/usage"')
    background: Optional[StrictBool] = Field(
        None, description="(invoke) start the run and return at once with its ids", json_schema_extra={"presence": True}
    )
    # plain str, aliased: the shell's run method keeps its name and run ids stay as typed
    run_id: str = Field(
        None,
        alias="run",
        description="AGENT RUN_ID - a run's state, events and reply",
        json_schema_extra={"presence": True},
    )
    follow: Optional[StrictBool] = Field(
        None, description="(run) show the run's events as they come until it ends", json_schema_extra={"presence": True}
    )
    approvals: runs.HermesApprovalsCommand = Field(None, description="Tool calls waiting for an operator's approval")
    approve: Dict[StrictStr, runs.HermesApproveCommand] = runs.approval_verb("Approve a tool call waiting in the inbox")
    deny: Dict[StrictStr, runs.HermesDenyCommand] = runs.approval_verb("Deny a tool call waiting in the inbox")
    # not 'changes': an agent named 'change' would then have to be quoted
    safety: change_views.HermesSafetyCommand = Field(
        None, description="The change envelope: devices being changed, breakers, changes of unknown outcome"
    )
    acknowledge: Dict[StrictStr, change_views.HermesAcknowledgeCommand] = change_views.outcome_verb()
    reset_breaker: Dict[StrictStr, change_views.HermesResetBreakerCommand] = Field(
        None,
        alias="reset-breaker",
        description="Let an agent change devices again after failed verifications stopped it",
        json_schema_extra={"pkey": "agent", "pkey_description": "Agent name"},
    )
    schedules: Dict[StrictStr, HermesSchedulesCommand] = agent_verb("List an agent's scheduled checks")
    pause: Dict[StrictStr, HermesPauseCommand] = agent_verb("Pause a scheduled check")
    resume: Dict[StrictStr, HermesResumeCommand] = agent_verb("Resume a paused scheduled check")
    history: Dict[StrictStr, HermesHistoryCommand] = agent_verb("Runs of a scheduled check and their findings")
    create: Dict[StrictStr, lifecycle.HermesCreateCommand] = agent_verb(
        "Create an agent on one worker from an nf:// file", "New agent name"
    )
    clone: Dict[StrictStr, lifecycle.HermesCloneCommand] = agent_verb(
        "Copy an agent on its worker (model: another model)", "New agent name"
    )
    stop: Dict[StrictStr, lifecycle.HermesStopCommand] = agent_verb("Stop an agent: no runs, its schedules wait")
    start: Dict[StrictStr, lifecycle.HermesStartCommand] = agent_verb("Start a stopped agent")
    restart: Dict[StrictStr, lifecycle.HermesRestartCommand] = agent_verb(
        "Stop and start an agent, reading its definition again"
    )
    delete: Dict[StrictStr, lifecycle.HermesDeleteCommand] = agent_verb(
        "Delete a created or cloned agent with its profile"
    )
    # plain str (see exact_values): PICLE keeps the values as typed, so an id 0012 or a name 1.10 stays one
    memory: Dict[StrictStr, carryover.HermesMemoryCommand] = agent_verb("What an agent remembers: memory and skills")
    evidence: Any = Field(None, description="AGENT RUN_ID (ARTIFACT_ID) - the tool results a run received, kept whole")
    report: Any = Field(None, description="AGENT SESSION - an incident note, every quote linked to its evidence")
    handover: Any = Field(None, description="WRITER - a shift handover across every hermes worker")
    only: Optional[StrictStr] = Field(None, description='(handover) only these agents\' work, e.g. "noc,service"')
    since: Optional[StrictStr] = Field(None, description="(handover) from when: 12h, or an ISO time")
    output: Optional[StrictStr] = Field(None, description="(report) folder, (handover) file to write")
    schedule: str = Field(None, description="AGENT create|update|run|remove ... - change or run a scheduled check")
    name: str = Field(None, description="(schedule create, update) schedule name")
    prompt: str = Field(None, description="(schedule update) what the agent is asked at every run")
    every: str = Field(None, description='(schedule update) when: "10m" (every 10m), "*/5 * * * *", an ISO time')
    repeat: Optional[StrictInt] = Field(None, description="(schedule create, update) stop after this many runs")
    workers: Optional[StrictStr] = Field(None, description="Hermes worker name or glob, e.g. hermes-lab-*")
    timeout: Optional[StrictInt] = Field(None, description="Run budget in seconds (invoke, chat)")
    runs: records.HermesRunsCommand = Field(None, description="Past runs of the workers: who asked what, how it ended")
    audit: records.HermesAuditCommand = Field(None, description="The workers' audit logs: export them, verify them")

    class PicleConfig:
        subshell = True
        prompt = "nf[hermes]#"

    source_workers = WorkersOption.source_workers

    @field_validator("schedule", "run_id", mode="before")
    @classmethod
    def exact_values(cls, value: Any) -> Any:
        """Several values of a plain str field arrive as a list, a bare 'run' as True (checked only in nf[hermes]#)."""
        return "" if value is True else " ".join(map(str, value)) if isinstance(value, list) else value

    @staticmethod
    def source_agents(choice: Optional[str] = None) -> List[str]:
        return agent_names(choice)

    source_invoke = source_chat = source_command = source_schedule = source_run_id = source_agents
    source_evidence = source_report = source_handover = source_agents

    @staticmethod
    def run(picle_app: Any = None, **kwargs: Any) -> RenderableType:
        workers, timeout = as_str(kwargs.get("workers")), kwargs.get("timeout")
        verb = next((v for v in ("invoke", "chat", "command") if kwargs.get(v) is not None), None)
        session, run_id = as_str(kwargs.get("session")) if verb else None, kwargs.get("run_id")
        if verb and run_id is not None:  # an unquoted 'run' inside the text
            return misparsed({verb: True}) or error_text([USAGE])
        if kwargs.get("background") and verb != "invoke" or kwargs.get("follow") and run_id is None:
            return runs.usage("background is an option of invoke, follow one of run")
        if verb == "invoke":
            args = positionals(kwargs["invoke"])
            if len(args) < 2:
                return error_text([USAGE])
            if kwargs.get("background"):
                return guarded(lambda: runs.start(router(), args[0], " ".join(args[1:]), session, workers, timeout))
            return guarded(lambda: run_invoke(args[0], " ".join(args[1:]), session, workers, timeout))
        if verb == "command":
            args = positionals(kwargs["command"])
            if len(args) < 2:
                return error_text([USAGE])
            return guarded(lambda: run_command(args[0], " ".join(args[1:]), session, workers))
        if verb == "chat":
            args = positionals(kwargs["chat"])
            return guarded(lambda: run_chat(picle_app, args[0] if args else None, session, workers, timeout))
        if kwargs.get("schedule") is not None:
            args, options = positionals(kwargs["schedule"]), {o: kwargs.get(o) for o in schedules.DEFINITION_OPTIONS}
            if run_id is not None:  # 'schedule AGENT run ID': the word run is also the run verb
                args += ["run", *positionals(run_id)]
            return guarded(lambda: schedules.schedule_command(picle_app, router(), args, options, workers))
        for verb in ("evidence", "report", "handover"):
            if kwargs.get(verb) is not None:
                return carryover_command(verb, positionals(kwargs[verb]), kwargs, workers)
        if run_id is not None:
            args = positionals(run_id)
            if len(args) != 2:
                return runs.usage(
                    "run takes the agent and the run id: hermes run AGENT RUN_ID (workers WORKER) (follow)"
                )
            follow = bool(kwargs.get("follow"))
            return guarded(lambda: runs.show(router(), args[0], args[1], workers, follow))
        if kwargs.get("session") is not None:
            args = positionals(kwargs["session"])
            if len(args) != 2:
                return error_text([USAGE])
            return guarded(lambda: run_show_session(args[0], args[1], workers))
        return error_text([USAGE])


def carryover_command(verb: str, args: List[str], kwargs: Dict[str, Any], workers: Optional[str]) -> RenderableType:
    output = as_str(kwargs.get("output"))
    if verb == "evidence":
        return guarded(lambda: carryover.evidence(router(), args, workers))
    if verb == "report":
        return guarded(lambda: carryover.report(router(), args, output, workers))
    agents, since = as_str(kwargs.get("only")), as_str(kwargs.get("since"))
    return guarded(lambda: carryover.handover(router(), args, agents, since, output, workers))


def run_invoke(agent: str, instructions: str, session: Optional[str], workers: Optional[str], timeout: Any) -> Any:
    routes = router()
    target = routes.resolve(agent, workers, session)
    console = Console()
    console.print(Text(f"invoking agent '{target.agent}' on worker '{target.worker}', session {session or 'new'}"))

    def show(event: dict) -> None:
        if not own_job_event(event):  # the header above says the job started; the reply says it ended
            console.print(job_event_line(event))

    turn = run_turn(routes, target, instructions, session, timeout, show, console)
    if turn is None:  # the operator stopped waiting
        return None
    session_id = (turn.result.get("result") or {}).get("session_id")
    hint = None
    if session_id and not turn.result.get("failed"):
        hint = f'continue with: hermes invoke {target.agent} "..." session {session_id} workers {target.worker}'
    return reply_view(turn.result, hint, turn.streamed)


def run_command(agent: str, line: str, session: Optional[str], workers: Optional[str]) -> RenderableType:
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
    if failed(res):
        return failed(res)
    data = CommandResultData.model_validate(res["result"])
    return Group(
        markdown(data.response or "(no answer)"),
        Text(f"{data.command} | agent {data.agent} | worker {data.worker} | session {data.session_id}", style="dim"),
    )


def run_show_session(agent: str, session_id: str, workers: Optional[str]) -> RenderableType:
    routes = router()
    target = routes.resolve(agent, workers, session_id)
    res = routes.one("get_session", target, {"session_id": session_id})
    return failed(res) or session_view(res["result"])


def run_chat(
    picle_app: Any, agent: Optional[str], session: Optional[str], workers: Optional[str], timeout: Any
) -> None:
    routes = router()
    if agent is None:
        target = pick_agent(picle_app, routes, workers)
    elif session:
        target = routes.resolve(agent, workers, session)
    else:
        hosting = routes.hosting(agent, workers)
        target = Target(hosting[0], agent) if len(hosting) == 1 else pick_agent(picle_app, routes, hosting, agent)
    if target is not None:
        Chat(picle_app, routes, target, session, timeout).loop()
    return None  # True would end nfcli
