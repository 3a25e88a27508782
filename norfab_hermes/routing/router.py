"""
Which worker runs a command of the hermes service: worker selectors, agents,
sessions, runs and approvals resolved to one worker.

An agent is ``(worker, agent)``, a session ``(worker, agent, session_id)``.
NorFab routes jobs to ``all``, ``any``, one worker name or a list of names;
it knows nothing about agents and rejects globs. This module closes that gap
for the ``nf#`` shell and for Python callers, using only the broker's worker
list (``show_workers``) and the hermes tasks themselves:

* **Worker selectors** (``workers``): ``None``, ``"all"`` or ``"any"`` mean
  every alive hermes worker; otherwise a worker name, a glob such as
  ``hermes-lab-*`` (expanded here with fnmatch), a comma-separated string or
  a list of those. Only workers the broker reports alive for the ``hermes``
  service are used. A name that is not alive, or a glob that matches nothing,
  is an error naming the alive workers.
* **Agents**: ``get_agents`` fans out to the selected workers. A name served
  by exactly one of them runs there; a name served by several is an error
  listing those workers (pick one with ``workers``); an unknown name is an
  error listing the known agents of every worker asked.
* **Sessions** resume only on the worker that owns them, never elsewhere.
  With one worker named in ``workers`` the session goes there and that worker
  checks it. Otherwise ``get_session`` asks every selected worker serving the
  agent (one fan-out job) and the single owner is used. If no alive worker
  owns it - its worker is down, or the id is wrong - that is an error: the
  session is not silently continued on another worker.
* **Runs** (for ``interrupt``): the worker whose ``get_status`` lists the run
  among its active runs; if none does and one worker serves the agent, that
  worker answers (it says whether the run already finished). ``get_run``
  asks every selected worker serving the agent: a worker keeps its finished
  runs too, and only the one that ran it knows its id.
* **Approvals** are known only on the worker of their run: ``approve`` and
  ``deny`` go to every selected worker and the one that knows the id answers.
  So do changes of unknown outcome (``acknowledge_outcome``).
* **Records** (``get_runs``, ``get_audit``, ``verify_audit``) are each
  worker's own: the selected workers answer for themselves (``records``).

``routing.client.Hermes`` wraps this for Python. Only the standard library,
the NorFab client API and the package's pure modules are imported here: the
worker module must stay out of client processes.
"""

import fnmatch
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple, Union

from ..errors import NOT_HERE, error_code
from ..identity.client import configured_signer, signed
from ..models import AgentSummary, ApprovalInfo, WorkerStatus
from ..norfab_compat import client_jobs

SERVICE = "hermes"
GLOB_CHARS = "*?["
BROKER_TIMEOUT = 30  # seconds for show_workers and the quiet control tasks
INVOKE_JOB_TIMEOUT = 600  # NorFab's default job timeout, above the default 300 s run budget
JOB_MARGIN = 30  # seconds between a requested run budget and the job timeout
COMMAND_JOB_TIMEOUT = 90  # the worker gives a native command 60 s
SESSION_HISTORY = 200  # newest invoke jobs of this client searched for a session's last worker

Selector = Union[None, str, List[str]]
Reply = Dict[str, Any]  # one worker's NorFab Result, as the client's run_job hands it back (a dict)
Replies = Dict[str, Reply]  # by worker


def _unknown_here(res: Optional[Reply]) -> bool:
    """No answer, or an answer that the id belongs to some other worker (its error code)."""
    return res is None or error_code(res) in NOT_HERE


def _no_answer(task: str, worker: str) -> Replies:
    message = f"hermes worker '{worker}' did not answer {task}: it left the broker; check 'show workers'"
    return {worker: {"failed": True, "errors": [message], "result": None, "status": "no answer"}}


class RoutingError(Exception):
    """A command cannot be routed to one hermes worker; the message says why and what to do."""


@dataclass(frozen=True)
class Target:
    """Where a command runs: the worker and the agent on it."""

    worker: str
    agent: str


def _patterns(workers: Selector) -> List[str]:
    if workers is None:
        return []
    items = workers if isinstance(workers, (list, tuple)) else [workers]
    names = [part.strip() for item in items for part in str(item).split(",")]
    return [name for name in names if name and name not in ("all", "any")]


def invoke_job_timeout(timeout: Optional[float]) -> float:
    """NorFab job timeout for an invoke with run budget ``timeout`` (the worker ends the run first)."""
    return float(timeout) + JOB_MARGIN if timeout else INVOKE_JOB_TIMEOUT


class Router:
    """
    Resolves worker selectors, agents, sessions and runs to hermes workers.

    Args:
        client: NorFab ``NFPClient``.
        timeout: seconds to wait for the broker and for control tasks.
    """

    def __init__(self, client: Any, timeout: float = BROKER_TIMEOUT, signer: Any = "configured") -> None:
        self.client = client
        self.timeout = timeout
        # signs every job for the operator when a key is configured (identity.client.KEY_ENV)
        self.signer = configured_signer() if signer == "configured" else signer

    def signed(
        self, task: str, workers: List[str], kwargs: Dict[str, Any], subject: Optional[str] = None
    ) -> Dict[str, Any]:
        """A job's arguments with the operator's proof for exactly this job (none without a key)."""
        if self.signer is None:
            return kwargs
        return signed(self.signer, self.client.name, task, list(workers), kwargs, subject)

    # ---------------------------------------------------------------- workers

    def workers(self) -> Dict[str, str]:
        """Hermes workers known to the broker: name to status (``alive`` or ``dead``)."""
        reply = self.client.mmi("mmi.service.broker", "show_workers", kwargs={"service": SERVICE}, timeout=self.timeout)
        if str(reply.get("status")) != "200" or reply.get("errors"):
            raise RoutingError(f"could not list hermes workers from the broker: {'; '.join(reply.get('errors') or [])}")
        return {w["name"]: w["status"] for w in reply.get("results") or [] if w.get("name")}

    def select(self, workers: Selector = None) -> List[str]:
        """Alive hermes worker names matching ``workers``, sorted; an empty match is an error."""
        known = self.workers()
        alive = sorted(name for name, status in known.items() if status == "alive")
        if not alive:
            raise RoutingError("no hermes workers are alive; check 'show workers' and the workers' logs")
        patterns = _patterns(workers)
        if not patterns:
            return alive
        selected: List[str] = []
        for pattern in patterns:
            if any(char in pattern for char in GLOB_CHARS):
                matched = fnmatch.filter(alive, pattern)
                if not matched:
                    raise RoutingError(
                        f"no alive hermes worker matches '{pattern}'; alive hermes workers: {', '.join(alive)}"
                    )
            elif pattern in alive:
                matched = [pattern]
            else:
                state = f"is {known[pattern]}" if pattern in known else "is not registered with the broker"
                raise RoutingError(f"hermes worker '{pattern}' {state}; alive hermes workers: {', '.join(alive)}")
            selected.extend(name for name in matched if name not in selected)
        return sorted(selected)

    def require_alive(self, worker: str) -> None:
        """Raise RoutingError unless ``worker`` is an alive hermes worker."""
        self.select(worker)

    # ------------------------------------------------------------------ tasks

    def call(
        self,
        task: str,
        workers: List[str],
        kwargs: Optional[Dict[str, Any]] = None,
        timeout: Optional[float] = None,
        subject: Optional[str] = None,
    ) -> Replies:
        """Run a hermes task quietly on explicit workers; returns NorFab Result dicts by worker.

        NorFab fails a whole job when a worker it went to leaves the broker before answering (a
        worker killed moments ago is still listed alive): then each worker is asked on its own,
        so that the live ones answer and the gone one's reply says so.
        """
        reply = self._job(task, workers, kwargs or {}, timeout, subject)
        if not reply and len(workers) > 1:
            reply = {}
            for worker in workers:
                reply.update(self._job(task, [worker], kwargs or {}, timeout, subject) or _no_answer(task, worker))
        if not reply:
            raise RoutingError(f"the broker did not accept hermes {task} for workers {', '.join(workers)}")
        return reply

    def _job(
        self, task: str, workers: List[str], kwargs: Dict[str, Any], timeout: Optional[float], subject: Optional[str]
    ) -> Optional[Replies]:
        replies: Optional[Replies] = self.client.run_job(
            SERVICE,
            task,
            kwargs=self.signed(task, workers, kwargs, subject),
            workers=list(workers),
            timeout=timeout or self.timeout,
        )
        return replies

    def one(
        self, task: str, target: Target, kwargs: Optional[Dict[str, Any]] = None, timeout: Optional[float] = None
    ) -> Reply:
        """Run a hermes task for ``target``'s agent on its worker; that worker's Result dict."""
        reply = self.call(task, [target.worker], {"agent": target.agent, **(kwargs or {})}, timeout)
        if target.worker not in reply:
            raise RoutingError(f"hermes worker '{target.worker}' did not answer {task}")
        return reply[target.worker]

    def agents(self, workers: Selector = None) -> Replies:
        """``get_agents`` Result dicts of the selected workers, by worker."""
        return self.call("get_agents", self.select(workers))

    def status(self, workers: Selector = None) -> Replies:
        """``get_status`` Result dicts of the selected workers, by worker."""
        return self.call("get_status", self.select(workers))

    # ---------------------------------------------------------------- resolve

    def hosting(self, agent: str, workers: Selector = None) -> List[str]:
        """Selected workers serving ``agent``; an error listing known agents when none does."""
        replies = self.agents(workers)
        hosting, known, unreachable = [], [], []
        for worker, res in sorted(replies.items()):
            if res.get("failed") or res.get("result") is None:
                unreachable.append(f"{worker} ({'; '.join(res.get('errors') or [res.get('status') or 'no answer'])})")
                continue
            names = [AgentSummary.model_validate(a).name for a in res["result"]]
            known.append(f"{worker}: {', '.join(names) or 'none'}")
            if agent in names:
                hosting.append(worker)
        if hosting:
            return hosting
        message = f"agent '{agent}' not found; known agents: {'; '.join(known) or 'none'}"
        if unreachable:
            message += f"; workers that did not answer: {', '.join(unreachable)}"
        down = sorted(name for name, status in self.workers().items() if status != "alive")
        if down:
            message += f"; hermes workers that are down, whose agents are not listed: {', '.join(down)}"
        raise RoutingError(message)

    def resolve(self, agent: str, workers: Selector = None, session_id: Optional[str] = None) -> Target:
        """
        The one worker that runs ``agent`` (and owns ``session_id`` when given).

        Raises:
            RoutingError: unknown agent, agent served by several selected
                workers, session owned by no alive worker, or a selector
                that matches no alive worker.
        """
        try:
            hosting = self.hosting(agent, workers)
            if session_id:
                return Target(self._session_owner(agent, session_id, hosting, workers), agent)
        except RoutingError as error:
            raise RoutingError(f"{error}{self._last_owner_hint(agent, session_id)}") from None
        if len(hosting) > 1:
            raise RoutingError(
                f"agent '{agent}' is served by several hermes workers: {', '.join(hosting)}; "
                f"choose one with workers, e.g. workers {hosting[0]}"
            )
        return Target(hosting[0], agent)

    def _session_owner(self, agent: str, session_id: str, hosting: List[str], workers: Selector) -> str:
        patterns = _patterns(workers)
        if len(patterns) == 1 and not any(char in patterns[0] for char in GLOB_CHARS):
            return hosting[0]  # named explicitly: that worker checks the session itself
        replies = self.call("get_session", hosting, {"agent": agent, "session_id": session_id, "limit": 1})
        owners = sorted(w for w, res in replies.items() if not res.get("failed") and res.get("result"))
        if len(owners) == 1:
            return owners[0]
        if owners:
            raise RoutingError(
                f"session '{session_id}' of agent '{agent}' exists on several workers: {', '.join(owners)}; "
                "choose one with workers"
            )
        raise RoutingError(
            f"session '{session_id}' of agent '{agent}' is not on any alive hermes worker serving the agent "
            f"(asked {', '.join(hosting)}); sessions resume only on their own worker: if that worker is down, "
            "start it again, or start a new session"
        )

    def _last_owner_hint(self, agent: str, session_id: Optional[str]) -> str:
        """Where this client last ran ``session_id``, when that worker is not alive now.

        The broker forgets a dead worker after its keepalives expire; the
        client's own job store still says which worker answered the session.
        """
        if not session_id:
            return ""
        for job in client_jobs(self.client, SERVICE, "invoke", SESSION_HISTORY):
            for worker, res in (job.get("result_data") or {}).items():
                result = (res or {}).get("result") if isinstance(res, dict) else None
                if isinstance(result, dict) and result.get("session_id") == session_id and result.get("agent") == agent:
                    if self.workers().get(worker) == "alive":
                        return ""
                    return (
                        f"; session '{session_id}' belongs to hermes worker '{worker}' (it answered it last), "
                        "which is not alive: start that worker again, sessions resume only on their own worker"
                    )
        return ""

    def run_owner(self, agent: str, run_id: str, workers: Selector = None) -> Target:
        """The worker running ``run_id`` of ``agent``, from the workers' active runs."""
        hosting = self.hosting(agent, workers)
        replies = self.call("get_status", hosting)
        for worker in hosting:
            res = replies.get(worker) or {}
            if res.get("failed") or not res.get("result"):
                continue
            if any(run.run_id == run_id for run in WorkerStatus.model_validate(res["result"]).active_runs):
                return Target(worker, agent)
        if len(hosting) == 1:
            return Target(hosting[0], agent)  # the worker says whether the run already finished
        raise RoutingError(
            f"run '{run_id}' is not running on any hermes worker serving agent '{agent}' (asked {', '.join(hosting)})"
        )

    def run_state(self, agent: str, run_id: str, workers: Selector = None, offset: int = 0) -> Tuple[Target, Reply]:
        """``get_run`` of ``run_id`` from the worker that knows it, running or finished; (its target, its Result)."""
        hosting = self.hosting(agent, workers)
        replies = self.call("get_run", hosting, {"agent": agent, "run_id": run_id, "offset": offset})
        if len(hosting) == 1:  # the worker's own answer, also when it does not know the run
            if hosting[0] not in replies:
                raise RoutingError(f"hermes worker '{hosting[0]}' did not answer get_run")
            return Target(hosting[0], agent), replies[hosting[0]]
        owners = [worker for worker in hosting if not _unknown_here(replies.get(worker))]
        if len(owners) == 1:
            return Target(owners[0], agent), replies[owners[0]]
        if owners:
            raise RoutingError(
                f"run '{run_id}' is known on several workers: {', '.join(owners)}; choose one with workers"
            )
        raise RoutingError(
            f"run '{run_id}' of agent '{agent}' is not known on any hermes worker serving the agent "
            f"(asked {', '.join(hosting)}); a worker keeps its runs' records for its records.keep_days"
        )

    def decide(self, task: str, approval_id: str, note: Optional[str] = None, workers: Selector = None) -> Replies:
        """
        ``approve`` or ``deny`` on every selected worker; the Result of the one that knows the id, by worker.

        Raises:
            RoutingError: no selected worker knows ``approval_id``.
        """
        return self._known_one(
            task,
            {"approval_id": approval_id},
            note,
            workers,
            f"approval '{approval_id}' is not known on any hermes worker (asked {{asked}}); "
            "see the pending ones with 'hermes approvals'",
        )

    def acknowledge(self, outcome_id: str, note: Optional[str] = None, workers: Selector = None) -> Replies:
        """
        ``acknowledge_outcome`` on every selected worker; the Result of the one that knows the id, by worker.

        Raises:
            RoutingError: no selected worker knows ``outcome_id``.
        """
        return self._known_one(
            "acknowledge_outcome",
            {"outcome_id": outcome_id},
            note,
            workers,
            f"change outcome '{outcome_id}' is not known on any hermes worker (asked {{asked}}); "
            "see them with 'hermes safety'",
        )

    def _decided_digest(self, asked: List[str], kwargs: Dict[str, Any]) -> Optional[str]:
        """The digest a decision's proof signs: the pending approval's change digest (or arguments digest)."""
        for res in self.call("get_approvals", asked).values():
            for item in (res or {}).get("result") or []:
                approval = ApprovalInfo.model_validate(item)
                if approval.approval_id == kwargs["approval_id"]:
                    return approval.change_digest or approval.arguments_digest
        return None

    def _known_one(
        self, task: str, kwargs: Dict[str, Any], note: Optional[str], workers: Selector, unknown: str
    ) -> Replies:
        """A task about an id only its worker knows, sent to every selected worker: the answers of those that know it."""
        asked = self.select(workers)
        if note is not None:
            kwargs = {**kwargs, "note": note}
        subject = self._decided_digest(asked, kwargs) if task in ("approve", "deny") and self.signer else None
        replies = self.call(task, asked, kwargs, subject=subject)
        owners = {worker: replies[worker] for worker in asked if not _unknown_here(replies.get(worker))}
        if not owners:
            raise RoutingError(unknown.format(asked=", ".join(asked)))
        return owners
