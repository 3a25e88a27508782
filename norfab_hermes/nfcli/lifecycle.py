"""
Agent lifecycle from the ``nf#`` shell: ``hermes create``, ``clone``,
``stop``, ``start``, ``restart`` and ``delete``, each one ``manage_agent``
job on one worker.

A new agent (create, clone) does not exist anywhere yet, so it goes to the
ONE worker named in ``workers`` - no glob, no list, no default. The other
actions find the agent's worker the way ``invoke`` does (an agent on several
workers needs ``workers``). ``delete`` asks first when nfcli reads a terminal.
"""

from typing import Any, ClassVar, List, Optional

from norfab.clients.nfcli_shell.common import ClientRunJobArgs
from pydantic import ConfigDict, Field, StrictBool
from rich.console import Group, RenderableType
from rich.text import Text

from ..models import AgentSummary, ManageAgentResultData
from ..routing import GLOB_CHARS, Router, RoutingError, Target
from .common import WorkersOption, agent_names, as_str, confirm, guarded, hint, misparsed, on_terminal, router
from .live import error_text
from .picle_compat import Maybe
from .tables import table
from .views import state_text

USAGE = """  hermes create NAME from nf://PATH.yaml workers WORKER
  hermes clone NAME from AGENT (model MODEL_ID) workers WORKER
  hermes stop|restart AGENT (workers WORKER) (interrupt)
  hermes delete AGENT (workers WORKER) (interrupt) (yes)
  hermes start AGENT (workers WORKER)
    create and clone make the agent on the one worker named in workers (no glob); interrupt ends the
    agent's runs in flight instead of refusing; delete asks first (without a terminal it needs yes);
    inventory agents cannot be deleted."""

MANAGE_JOB_TIMEOUT = 120  # seconds: runs interrupted (5 s grace) and adapters detached and attached (30 s each)
NEXT_STEP = {
    "create": 'try it: hermes invoke {agent} "..." workers {worker}',
    "clone": 'try it: hermes invoke {agent} "..." workers {worker}',
    "start": 'it takes runs: hermes invoke {agent} "..." workers {worker}',
    "restart": 'it takes runs: hermes invoke {agent} "..." workers {worker}',
    "stop": "start it again: hermes start {agent} workers {worker}",
    "delete": "the agents left: hermes agents workers {worker}",
}


def usage(problem: str) -> Text:
    return error_text([problem, "usage:", USAGE])


def single(value: Any) -> Optional[str]:
    """One value of a plain ``str`` option as typed; None when missing or given more than once."""
    return None if value is None or value is True or isinstance(value, list) else str(value)


# ---------------------------------------------------------------- commands


class HermesCreateCommand(WorkersOption):
    model_config = ConfigDict(populate_by_name=True)
    # plain str: PICLE leaves such values alone; presence: a bare 'from' arrives as True and is refused
    from_: Maybe[str] = Field(
        None,
        alias="from",
        description="nf:// URL of a YAML file holding the agent's definition",
        json_schema_extra={"presence": True},
    )

    @staticmethod
    def source_from_(choice: Optional[str] = None) -> List[str]:
        try:
            return ClientRunJobArgs.walk_norfab_files(choice)
        except Exception:  # completion must never break the prompt
            return []

    @staticmethod
    def run(agent: str, from_: Any = None, workers: Optional[str] = None, **kwargs: Any) -> RenderableType:
        if refused := misparsed(kwargs):
            return refused
        source = single(from_)
        if source is None:
            return usage("create takes one definition file: hermes create NAME from nf://PATH.yaml workers WORKER")
        name, where = str(agent), as_str(workers)
        return guarded(lambda: create(router(), "create", name, where, {"source": source}))


class HermesCloneCommand(WorkersOption):
    model_config = ConfigDict(populate_by_name=True)
    from_: Maybe[str] = Field(
        None,
        alias="from",
        description="The agent to copy, on the worker named in workers",
        json_schema_extra={"presence": True},
    )
    model: Maybe[str] = Field(
        None,
        description="Model id of the copy, e.g. gpt-4.1 (default: the original's)",
        json_schema_extra={"presence": True},
    )

    @staticmethod
    def source_from_(choice: Optional[str] = None) -> List[str]:
        return agent_names(choice)

    @staticmethod
    def run(
        agent: str, from_: Any = None, model: Any = None, workers: Optional[str] = None, **kwargs: Any
    ) -> RenderableType:
        if refused := misparsed(kwargs):
            return refused
        original, model_id = single(from_), single(model)
        if original is None or (model is not None and model_id is None):
            return usage(
                "clone takes the agent to copy and at most one model: hermes clone NAME from AGENT (model ID) workers W"
            )
        task = {
            "clone_from": original,
            "definition": {"hermes": {"model": {"default": model_id}}} if model_id else None,
        }
        name, where = str(agent), as_str(workers)
        return guarded(lambda: create(router(), "clone", name, where, task))


class HermesStartCommand(WorkersOption):
    """``AGENT (workers WORKER)``; subclasses change ACTION, the manage_agent action."""

    ACTION: ClassVar[str] = "start"

    @classmethod
    def run(
        cls,
        agent: str,
        workers: Optional[str] = None,
        interrupt: Any = None,
        yes: Any = None,
        picle_app: Any = None,
        **kwargs: Any,
    ) -> RenderableType:
        if refused := misparsed(kwargs):
            return refused
        for option, value in (("interrupt", interrupt), ("yes", yes)):
            if value not in (None, True, False):
                return usage(f"{option} takes no value: hermes {cls.ACTION} AGENT workers WORKER {option}")
        name, where = str(agent), as_str(workers)
        return guarded(lambda: act(picle_app, router(), cls.ACTION, name, where, interrupt is True, yes is True))


class HermesStopCommand(HermesStartCommand):
    ACTION: ClassVar[str] = "stop"
    interrupt: Optional[StrictBool] = Field(
        None,
        description="Interrupt the agent's runs in flight instead of refusing",
        json_schema_extra={"presence": True},
    )


class HermesRestartCommand(HermesStopCommand):
    ACTION: ClassVar[str] = "restart"


class HermesDeleteCommand(HermesStopCommand):
    ACTION: ClassVar[str] = "delete"
    yes: Optional[StrictBool] = Field(
        None,
        description="Delete without asking; needed when nfcli reads no terminal (a script)",
        json_schema_extra={"presence": True},
    )


# ----------------------------------------------------------------- actions


def ask(router: Router, target: Target, action: str, **kwargs: Any) -> RenderableType:
    """Run manage_agent for the target: what the worker did, or its errors as red text."""
    task = {"action": action, **{key: value for key, value in kwargs.items() if value not in (None, False)}}
    res = router.one("manage_agent", target, task, timeout=MANAGE_JOB_TIMEOUT)
    if res.get("failed") or res.get("result") is None:
        return error_text(res.get("errors") or [f"hermes {action} failed: {res.get('status')}"])
    return action_view(ManageAgentResultData.model_validate(res["result"]))


def one_worker(router: Router, workers: Optional[str], action: str) -> str:
    """The one alive worker named in ``workers``; a new agent needs it, the profile does not exist yet."""
    names = [name.strip() for name in (workers or "").split(",") if name.strip()]
    if len(names) == 1 and names[0] not in ("all", "any") and not any(char in names[0] for char in GLOB_CHARS):
        return router.select(names[0])[0]  # an error unless that worker is alive
    given = f"not '{workers}'" if workers else "none was given"
    raise RoutingError(
        f"hermes {action} needs exactly one worker by name in workers ({given}): the new agent's profile is made "
        f"on that worker; alive hermes workers: {', '.join(router.select())}"
    )


def create(router: Router, action: str, agent: str, workers: Optional[str], task: dict) -> RenderableType:
    """``hermes create NAME from nf://...`` and ``hermes clone NAME from AGENT``."""
    return ask(router, Target(one_worker(router, workers, action), agent), action, **task)


def act(
    app: Any, router: Router, action: str, agent: str, workers: Optional[str], interrupt: bool, yes: bool = False
) -> RenderableType:
    """``hermes stop|start|restart|delete AGENT``: on the agent's worker.

    ``delete`` asks first on a terminal; without one (a script) nobody can
    answer, so it refuses unless ``yes`` was given.
    """
    target = router.resolve(agent, workers)
    if action == "delete" and not yes and not on_terminal():
        return error_text(
            [
                f"nothing deleted: no terminal to ask on; to delete agent '{target.agent}' on worker '{target.worker}' "
                f"with its profile, skills, memory and schedules, say yes: hermes delete {target.agent} "
                f"workers {target.worker} yes"
            ]
        )
    if action == "delete" and not yes:
        owner = summary(router, target).owner or "unknown owner"
        question = (
            f"delete agent '{target.agent}' on worker '{target.worker}' "
            f"({owner}, its profile, skills, memory and schedules)? [y/N] "
        )
        if not confirm(app, question):
            return Text("nothing deleted", style="yellow")
    return ask(router, target, action, interrupt=interrupt)


def summary(router: Router, target: Target) -> AgentSummary:
    """The target agent's row of its worker's get_agents."""
    res = router.agents(target.worker).get(target.worker) or {}
    for agent in (AgentSummary.model_validate(a) for a in res.get("result") or []):
        if agent.name == target.agent:
            return agent
    raise RoutingError(f"agent '{target.agent}' is no longer on worker '{target.worker}'")


# ------------------------------------------------------------------- views


def action_view(data: ManageAgentResultData) -> RenderableType:
    """The worker's steps, the agent's row and what to do next."""
    parts: List[RenderableType] = [Text(step) for step in data.done] or [Text(f"{data.action}: nothing to do")]
    parts.append(
        table(
            f"agent '{data.agent}' on worker '{data.worker}'",
            ["worker", "agent", "owner", "state"],
            [[data.worker, data.agent, data.owner, state_text(data.state)]],
        )
    )
    step = NEXT_STEP.get(data.action)
    if step:
        parts.append(hint(step.format(agent=data.agent, worker=data.worker)))
    return Group(*parts)
