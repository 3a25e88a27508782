"""
Records tools: an agent reads its own worker's records of the agents its
definition names (sessions: list, search, read; schedules: their history;
evidence: artifacts), through the worker's own stores.

A records tool is its own kind, like a delegate, never a NorFab tool (the
``hermes`` service stays forbidden as a tool target): no NorFab job is sent,
so nothing else of the hermes service is reachable through it. Every
argument is checked here as hostile: the agent must be one the definition
names, a session, schedule or artifact must be that agent's; what comes
back is redacted (and bounded by the tool runner like any result).
"""

import json
from typing import Any, Callable, Dict, List, Optional, Protocol, Tuple

from ...errors import HermesError
from ...models import ScheduleResultData
from ...safety.redact import redact
from ..evidence.store import EvidenceStore
from .calls import CallTrace, ToolError, ToolRun
from .specs import SEARCH_CHARS, RecordsSpec

DEFAULT_LIMIT = 10
EXCERPT = 240  # characters either side of a search hit
MESSAGE_CHARS = 4000  # of each message of a session read
SESSIONS_SEARCHED = 50  # newest sessions of an agent a search looks through


class ScheduleReader(Protocol):
    """The schedule actions a records tool reads through (``schedules.actions.ScheduleActions``)."""

    def list_schedules(self, agent: str) -> ScheduleResultData: ...

    def runs(self, agent: str, ref: Optional[str], limit: int) -> ScheduleResultData: ...


class RecordsReader:
    """
    Reads records for the records tools of one worker's agents.

    Args:
        sessions: the worker's sessions (``list``, ``get``).
        schedules: the worker's schedule actions (``schedules.actions.ScheduleActions``).
        evidence: the evidence store (``artifacts``, ``artifact``).
        known: whether an agent is one of this worker's.
        secrets: values to mask.
    """

    def __init__(
        self,
        sessions: Any,
        schedules: ScheduleReader,
        evidence: EvidenceStore,
        known: Callable[[str], bool],
        secrets: Callable[[], List[str]],
    ) -> None:
        self.sessions = sessions
        self.schedules = schedules
        self.evidence = evidence
        self.known = known
        self.secrets = secrets

    def call(
        self,
        spec: RecordsSpec,
        arguments: Dict[str, Any],
        run: ToolRun,
        interrupted: Callable[[], bool],
        trace: CallTrace,
    ) -> Tuple[str, str, Optional[str]]:
        """A records tool's call (``kinds.ToolKind``): reads only, no job, nothing to interrupt."""
        return self.read(spec, arguments)

    def read(self, spec: RecordsSpec, arguments: Dict[str, Any]) -> Tuple[str, str, Optional[str]]:
        """The text the model reads, the call's status and error; ToolError for a refused call."""
        action, agent = self._check(spec, arguments)
        limit = int(arguments.get("limit") or DEFAULT_LIMIT)
        try:
            records = getattr(self, f"_{action}")(agent, arguments, limit)
        except HermesError as error:  # an id that is not the agent's, a schedule that does not exist
            raise ToolError(f"{error}; the record was not read") from None
        payload = {"ok": True, "tool": spec.name, "action": action, "agent": agent, "records": records}
        return json.dumps(redact(payload, self.secrets()), default=str), "completed", None

    def _check(self, spec: RecordsSpec, arguments: Any) -> Tuple[str, str]:
        if not isinstance(arguments, dict):
            raise ToolError("arguments must be a JSON object")
        unknown = sorted(set(arguments) - set(spec.parameters["properties"]))
        if unknown:
            raise ToolError(f"argument(s) {', '.join(unknown)} are not arguments of this tool; call again without them")
        action, agent = arguments.get("action"), arguments.get("agent")
        if action not in spec.actions:
            raise ToolError(f"action must be one of {', '.join(spec.actions)}; call again")
        if agent not in spec.definition.agents or not self.known(agent):
            raise ToolError(
                f"agent '{agent}' is not one whose records this tool reads ({', '.join(spec.definition.agents)})"
            )
        for name in ("session_id", "text", "schedule", "run_id", "artifact_id"):
            value = arguments.get(name)
            if value is not None and (not isinstance(value, str) or not value.strip() or len(value) > SEARCH_CHARS):
                raise ToolError(f"{name} must be text of 1 to {SEARCH_CHARS} characters; call again")
        limit = arguments.get("limit")
        if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= 50):
            raise ToolError("limit must be a whole number from 1 to 50; call again")
        return action, agent

    @staticmethod
    def _need(arguments: Dict[str, Any], *names: str) -> str:
        value: Optional[str] = next((arguments.get(n) for n in names if arguments.get(n)), None)
        if value is None:
            raise ToolError(f"{' or '.join(names)} is required for this action; call again with it")
        return value

    # ------------------------------------------------------------- sessions

    def _list_sessions(self, agent: str, arguments: Dict[str, Any], limit: int) -> List[Dict[str, Any]]:
        return [s.model_dump() for s in self.sessions.list(agent, limit)]

    def _read_session(self, agent: str, arguments: Dict[str, Any], limit: int) -> Dict[str, Any]:
        session = self.sessions.get(agent, self._need(arguments, "session_id"), limit * 5)
        data: Dict[str, Any] = session.model_dump()  # a SessionDetail (the sessions room is not a tool's to import)
        for message in data["messages"]:
            message["content"] = (message.get("content") or "")[:MESSAGE_CHARS]
        return data

    def _search_sessions(self, agent: str, arguments: Dict[str, Any], limit: int) -> List[Dict[str, Any]]:
        text = self._need(arguments, "text").lower()
        hits: List[Dict[str, Any]] = []
        for summary in self.sessions.list(agent, SESSIONS_SEARCHED):
            session = self.sessions.get(agent, summary.session_id, 10_000)
            for message in session.messages:
                content = message.content or ""
                at = content.lower().find(text)
                if at < 0:
                    continue
                hits.append(
                    {
                        "session_id": summary.session_id,
                        "title": summary.title,
                        "role": message.role,
                        "tool_name": message.tool_name,
                        "timestamp": message.timestamp,
                        "excerpt": content[max(0, at - EXCERPT) : at + len(text) + EXCERPT],
                    }
                )
                if len(hits) >= limit:
                    return hits
        return hits

    # ------------------------------------------------------------ schedules

    def _list_schedules(self, agent: str, arguments: Dict[str, Any], limit: int) -> List[Dict[str, Any]]:
        return [s.model_dump() for s in self.schedules.list_schedules(agent).schedules[:limit]]

    def _schedule_history(self, agent: str, arguments: Dict[str, Any], limit: int) -> List[Dict[str, Any]]:
        ref = self._need(arguments, "schedule")
        return [r.model_dump() for r in self.schedules.runs(agent, ref, limit).history]

    # ------------------------------------------------------------- evidence

    def _list_evidence(self, agent: str, arguments: Dict[str, Any], limit: int) -> List[Dict[str, Any]]:
        run_id, session_id = arguments.get("run_id"), arguments.get("session_id")
        if not (run_id or session_id):
            self._need(arguments, "run_id", "session_id")
        found = self.evidence.artifacts(agent, run_id=run_id, session_id=session_id)
        return [a.model_dump() for a in found[-limit:]]

    def _read_artifact(self, agent: str, arguments: Dict[str, Any], limit: int) -> Dict[str, Any]:
        return self.evidence.artifact(agent, self._need(arguments, "artifact_id")).model_dump()
