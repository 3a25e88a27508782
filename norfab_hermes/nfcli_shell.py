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
``every``, ``repeat``) on the same model; agent-only verbs (``sessions AGENT``
of :mod:`.nfcli.overview`, ``interrupt AGENT`` of :mod:`.nfcli.turns`,
``schedules``, ``pause``, ``resume``, ``history`` of :mod:`.nfcli.schedules`,
the lifecycle verbs ``create``, ``clone``, ``stop``, ``start``, ``restart``,
``delete`` of :mod:`.nfcli.lifecycle`, ``reset-breaker``) and the id verbs
``approve ID``, ``deny ID`` (:mod:`.nfcli.runs`) and ``acknowledge ID``
(:mod:`.nfcli.changes`) are PICLE key dicts; ``agents``, ``status``
(:mod:`.nfcli.overview`), ``runs`` and ``audit export|verify``
(:mod:`.nfcli.records`) are command models. This module holds the tree and
hands each free-text verb to its module (``invoke`` and ``command`` to
:mod:`.nfcli.turns`, ``chat`` to :mod:`.nfcli.chat`, ...). An agent name equal
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

from typing import Any, Callable, ClassVar, Dict, List, Optional

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr, field_validator
from rich.console import RenderableType

from .nfcli import carryover, chat, lifecycle, overview, picle_compat, records, runs, schedules, turns
from .nfcli import changes as change_views
from .nfcli.common import WorkersOption, agent_names, agent_verb, as_str, guarded, misparsed, positionals, router
from .nfcli.live import error_text

# by name: inside HermesShell's body the field 'schedules' hides the module
from .nfcli.notify import USAGE as NOTIFY_USAGE
from .nfcli.notify import HermesNotifyCommand
from .nfcli.picle_compat import Maybe
from .nfcli.schedules import HermesHistoryCommand, HermesPauseCommand, HermesResumeCommand, HermesSchedulesCommand

picle_compat.install()  # the plugin seam hands no App: PICLE's class learns quoted '?' and subshell history

USAGE = (
    """usage:
  hermes agents (workers SELECTOR)
  hermes status (workers SELECTOR)
  hermes invoke AGENT "INSTRUCTIONS" (session SESSION) (case-id CASE) (workers WORKER) (timeout SECONDS)
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
    + "\n"
    + NOTIFY_USAGE
)

Source = Callable[[Optional[str]], List[str]]  # a PICLE completion source: the values starting with CHOICE


class HermesShell(BaseModel):
    """The ``hermes`` commands: agents and their lifecycle, sessions, runs, approvals, changes and scheduled checks."""

    model_config = ConfigDict(populate_by_name=True)

    agents: Maybe[overview.HermesAgentsCommand] = Field(None, description="List agents of hermes workers")
    status: Maybe[overview.HermesStatusCommand] = Field(
        None, description="Show hermes workers: readiness, agents, active runs, schedulers"
    )
    invoke: Any = Field(None, description='AGENT "INSTRUCTIONS" - run one agent turn')
    chat: Any = Field(
        None, description="AGENT - chat with an agent; without AGENT pick one", json_schema_extra={"presence": True}
    )
    sessions: Dict[StrictStr, overview.HermesSessionsCommand] = agent_verb("List an agent's sessions")
    session: Any = Field(
        None, description="AGENT SESSION - show a session; with invoke, chat or command: the session to continue"
    )
    interrupt: Dict[StrictStr, turns.HermesInterruptCommand] = agent_verb("Stop an agent's running turn")
    command: Any = Field(None, description='AGENT "/COMMAND" - run a native command, e.g. "/usage"')
    background: Optional[StrictBool] = Field(
        None, description="(invoke) start the run and return at once with its ids", json_schema_extra={"presence": True}
    )
    # plain str, aliased: the shell's run method keeps its name and run ids stay as typed
    run_id: Maybe[str] = Field(
        None,
        alias="run",
        description="AGENT RUN_ID - a run's state, events and reply",
        json_schema_extra={"presence": True},
    )
    follow: Optional[StrictBool] = Field(
        None, description="(run) show the run's events as they come until it ends", json_schema_extra={"presence": True}
    )
    approvals: Maybe[runs.HermesApprovalsCommand] = Field(
        None, description="Tool calls waiting for an operator's approval"
    )
    approve: Dict[StrictStr, runs.HermesApproveCommand] = runs.approval_verb("Approve a tool call waiting in the inbox")
    deny: Dict[StrictStr, runs.HermesDenyCommand] = runs.approval_verb("Deny a tool call waiting in the inbox")
    # not 'changes': an agent named 'change' would then have to be quoted
    safety: Maybe[change_views.HermesSafetyCommand] = Field(
        None, description="The change envelope: devices being changed, breakers, changes of unknown outcome"
    )
    acknowledge: Dict[StrictStr, change_views.HermesAcknowledgeCommand] = change_views.outcome_verb()
    reset_breaker: Maybe[Dict[StrictStr, change_views.HermesResetBreakerCommand]] = Field(
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
    schedule: Maybe[str] = Field(
        None, description="AGENT create|update|run|remove ... - change or run a scheduled check"
    )
    name: Maybe[str] = Field(None, description="(schedule create, update) schedule name")
    prompt: Maybe[str] = Field(None, description="(schedule update) what the agent is asked at every run")
    every: Maybe[str] = Field(None, description='(schedule update) when: "10m" (every 10m), "*/5 * * * *", an ISO time')
    repeat: Optional[StrictInt] = Field(None, description="(schedule create, update) stop after this many runs")
    case_id: Maybe[str] = Field(
        None, alias="case-id", description="(invoke, handover) the case (incident) of the runs, e.g. INC-2041"
    )
    workers: Optional[StrictStr] = Field(None, description="Hermes worker name or glob, e.g. hermes-lab-*")
    timeout: Optional[StrictInt] = Field(None, description="Run budget in seconds (invoke, chat)")
    runs: Maybe[records.HermesRunsCommand] = Field(
        None, description="Past runs of the workers: who asked what, how it ended"
    )
    audit: Maybe[records.HermesAuditCommand] = Field(
        None, description="The workers' audit logs: export them, verify them"
    )
    notify: Maybe[HermesNotifyCommand] = Field(
        None, description="Notification channels: health, outbox, dead letters; test CHANNEL sends a test message"
    )

    class PicleConfig:
        subshell = True
        prompt = "nf[hermes]#"

    source_workers: ClassVar[Callable[[], List[str]]] = WorkersOption.source_workers

    @field_validator("schedule", "run_id", "case_id", mode="before")
    @classmethod
    def exact_values(cls, value: Any) -> Any:
        """Several values of a plain str field arrive as a list, a bare 'run' as True (checked only in nf[hermes]#)."""
        return "" if value is True else " ".join(map(str, value)) if isinstance(value, list) else value

    @staticmethod
    def source_agents(choice: Optional[str] = None) -> List[str]:
        return agent_names(choice)

    source_invoke: ClassVar[Source] = source_agents
    source_chat: ClassVar[Source] = source_agents
    source_command: ClassVar[Source] = source_agents
    source_schedule: ClassVar[Source] = source_agents
    source_run_id: ClassVar[Source] = source_agents
    source_evidence: ClassVar[Source] = source_agents
    source_report: ClassVar[Source] = source_agents
    source_handover: ClassVar[Source] = source_agents

    @staticmethod
    def run(picle_app: Any = None, **kwargs: Any) -> RenderableType:
        workers, timeout, case_id = as_str(kwargs.get("workers")), kwargs.get("timeout"), kwargs.get("case_id")
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
                text = " ".join(args[1:])
                return guarded(lambda: runs.start(router(), args[0], text, session, workers, timeout, case_id))
            return guarded(lambda: turns.invoke(args[0], " ".join(args[1:]), session, workers, timeout, case_id))
        if verb == "command":
            args = positionals(kwargs["command"])
            if len(args) < 2:
                return error_text([USAGE])
            return guarded(lambda: turns.command(args[0], " ".join(args[1:]), session, workers))
        if verb == "chat":
            args = positionals(kwargs["chat"])
            return guarded(lambda: chat.start(picle_app, args[0] if args else None, session, workers, timeout))
        if kwargs.get("schedule") is not None:
            args, options = positionals(kwargs["schedule"]), {o: kwargs.get(o) for o in schedules.DEFINITION_OPTIONS}
            if run_id is not None:  # 'schedule AGENT run ID': the word run is also the run verb
                args += ["run", *positionals(run_id)]
            return guarded(lambda: schedules.schedule_command(picle_app, router(), args, options, workers))
        for verb in ("evidence", "report", "handover"):
            if kwargs.get(verb) is not None:
                return carryover.command(verb, positionals(kwargs[verb]), kwargs, workers)
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
            return guarded(lambda: overview.show_session(args[0], args[1], workers))
        return error_text([USAGE])
