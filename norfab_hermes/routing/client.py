"""
``Hermes(client)``: the hermes service from Python, the way the ``nf#``
commands use it: agents found across workers, runs routed to the worker
that serves the agent (or owns the session), interrupts, sessions and
commands, and the workers' run records and audit logs.
"""

from typing import Any, Dict, List, Optional

from . import handover, records
from .router import BROKER_TIMEOUT, COMMAND_JOB_TIMEOUT, Replies, Reply, Router, Selector, invoke_job_timeout


class Hermes:
    """
    Python access to hermes agents with the shell's routing.

    Methods that address one agent return that worker's NorFab Result dict
    (``result``, ``failed``, ``errors``, ...); fan-out methods return Result
    dicts by worker. Routing problems raise :class:`RoutingError`; a task
    that ran and failed is returned with ``failed`` set and its ``errors``.

    Args:
        client: NorFab ``NFPClient``, e.g. ``nf.make_client()``.
        timeout: seconds to wait for the broker and for control tasks.
        signer: signs every request for its operator: ``identity.signer_for(path)``; by default the key
            of ``NORFAB_HERMES_KEY`` when set; None sends unsigned requests.
    """

    def __init__(self, client: Any, timeout: float = BROKER_TIMEOUT, signer: Any = "configured") -> None:
        self.client = client
        self.router = Router(client, timeout, signer)

    def agents(self, workers: Selector = None) -> Replies:
        """Agents of the selected workers: ``{worker: Result}``, each result a list of agent summaries."""
        return self.router.agents(workers)

    def status(self, workers: Selector = None) -> Replies:
        """Status of the selected workers: ``{worker: Result}``."""
        return self.router.status(workers)

    def invoke(
        self,
        agent: str,
        instructions: str,
        session_id: Optional[str] = None,
        workers: Selector = None,
        timeout: Optional[float] = None,
        case_id: Optional[str] = None,
    ) -> Reply:
        """
        Run one agent turn on the worker serving ``agent`` (or owning ``session_id``).

        Args:
            agent: agent name.
            instructions: what to ask the agent.
            session_id: continue this session, on its own worker.
            workers: worker selector narrowing where the agent is looked up.
            timeout: run budget in seconds (the job waits a little longer).
            case_id: the case (incident) the run belongs to; its records carry it.

        Returns:
            The worker's Result dict; ``result`` holds response, run_id,
            session_id, agent, worker, stop_reason, tool_calls, usage, warnings.
        """
        target = self.router.resolve(agent, workers, session_id)
        kwargs: Dict[str, Any] = {"instructions": instructions, "session_id": session_id}
        if timeout:
            kwargs["run_timeout"] = timeout
        if case_id:
            kwargs["case_id"] = case_id
        return self.router.one("invoke", target, kwargs, timeout=invoke_job_timeout(timeout))

    def approve(self, approval_id: str, note: Optional[str] = None, workers: Selector = None) -> Replies:
        """Approve a waiting call: ``{worker: Result}`` of the worker that knows ``approval_id``.

        With operators, the proof signs this approval's change digest, read from the worker first.
        """
        return self.router.decide("approve", approval_id, note, workers)

    def deny(self, approval_id: str, note: Optional[str] = None, workers: Selector = None) -> Replies:
        """Deny a waiting call: ``{worker: Result}`` of the worker that knows ``approval_id``."""
        return self.router.decide("deny", approval_id, note, workers)

    def command(self, agent: str, command: str, session_id: Optional[str] = None, workers: Selector = None) -> Reply:
        """Run a native slash command such as ``/usage`` in the agent's (session's) chat."""
        target = self.router.resolve(agent, workers, session_id)
        return self.router.one(
            "command", target, {"command": command, "session_id": session_id}, timeout=COMMAND_JOB_TIMEOUT
        )

    def sessions(self, agent: str, workers: Selector = None, limit: int = 20) -> Reply:
        """The agent's sessions, newest activity first."""
        return self.router.one("get_sessions", self.router.resolve(agent, workers), {"limit": limit})

    def session(self, agent: str, session_id: str, workers: Selector = None, limit: int = 50) -> Reply:
        """One session with its newest messages, from the worker owning it."""
        target = self.router.resolve(agent, workers, session_id)
        return self.router.one("get_session", target, {"session_id": session_id, "limit": limit})

    def interrupt(self, agent: str, run_id: str, workers: Selector = None) -> Reply:
        """Stop a running turn; the invoke returns with stop_reason ``interrupted``."""
        return self.router.one("interrupt", self.router.run_owner(agent, run_id, workers), {"run_id": run_id})

    def memory(
        self,
        agent: str,
        action: str = "list",
        target: Optional[str] = None,
        entry: Optional[str] = None,
        workers: Selector = None,
    ) -> Reply:
        """The agent's memory and skills (``list``), or ``clear`` a ``target``: memory, user or skills."""
        kwargs = {"action": action, "target": target, "entry": entry}
        return self.router.one("memory", self.router.resolve(agent, workers), {k: v for k, v in kwargs.items() if v})

    def evidence(
        self,
        agent: str,
        run_id: Optional[str] = None,
        artifact_id: Optional[str] = None,
        session_id: Optional[str] = None,
        workers: Selector = None,
    ) -> Reply:
        """A run's (or session's) artifacts, or one artifact whole."""
        kwargs = {"run_id": run_id, "artifact_id": artifact_id, "session_id": session_id}
        target = self.router.resolve(agent, workers)
        return self.router.one("evidence", target, {k: v for k, v in kwargs.items() if v})

    def report(self, agent: str, session_id: str, workers: Selector = None) -> Reply:
        """An incident note in Markdown from one session, every quote linked to its artifact and digest."""
        target = self.router.resolve(agent, workers, session_id)
        return self.router.one("report", target, {"session_id": session_id})

    def handover(
        self,
        writer: str,
        agents: Optional[List[str]] = None,
        since: Optional[str] = None,
        workers: Selector = None,
        request: Optional[str] = None,
        response_schema: Optional[Dict[str, Any]] = None,
        timeout: Optional[float] = None,
        case_id: Optional[str] = None,
    ) -> Reply:
        """
        A shift handover across every selected worker, written by agent ``writer``.

        Args:
            writer: the agent that writes the briefing.
            agents: agents whose work is handed over; omit for all.
            since: an ISO time or a duration back from now such as 12h (default 12h).
            workers: worker selector (default: every alive hermes worker).
            request: what the writer is asked (default: hand over the unresolved issues).
            response_schema: a JSON schema the briefing must match.
            timeout: the writer's run budget in seconds.
            case_id: hand over one case: the sessions of its runs (since its first run
                unless ``since`` says); the writer's run belongs to the case too.

        Returns:
            A Result-like dict whose ``result`` holds the material of every
            worker and the writer's run (``briefing.response`` is the briefing).
        """
        return handover.handover(
            self.router,
            writer,
            agents,
            since,
            workers,
            request,
            response_schema=response_schema,
            timeout=timeout,
            case_id=case_id,
        )

    def runs(self, workers: Selector = None, **filters: Any) -> Replies:
        """Recorded runs of the selected workers, newest first: ``{worker: Result}``, each result a page
        (``runs``, ``total``, ``next_offset``). Filters as the ``get_runs`` task takes them, e.g.
        ``case_id`` for the runs of one case across the workers."""
        return records.runs(self.router, workers, **filters)

    def verify_audit(self, workers: Selector = None) -> Replies:
        """The check of each selected worker's audit log: ``{worker: Result}``."""
        return records.verify_audit(self.router, workers)
