"""
An agent's sessions as NorFab callers see them: listing, reading, and the
gateway chat that carries a session when a caller continues it.

Hermes keeps every profile's sessions in the instance root's ``state.db``;
a session belongs to the agent whose profile created it. A session is
continued by pointing its NorFab chat at it again.
"""

import uuid
from datetime import datetime, timezone
from typing import Any, List, Optional

from ...errors import UnknownSession
from ...models import SessionDetails, SessionMessage, SessionSummary
from ..hermes.compat import PLATFORM
from ..hermes.records import MessageRow, SessionRow
from ..hermes.runtime import HermesRuntime

PAGE = 200  # state.db rows read at a time


class Sessions:
    """Sessions of the agents of one worker, read from Hermes' session store."""

    def __init__(self, worker_name: str, runtime: HermesRuntime) -> None:
        self.worker_name = worker_name
        self.runtime = runtime

    def list(self, agent: str, limit: int) -> List[SessionSummary]:
        """The agent's sessions, newest activity first (all profiles share one state.db)."""
        found: List[SessionSummary] = []
        offset = 0
        while len(found) < limit:
            rows = self.runtime.gateway.list_sessions(offset, PAGE)
            found += [summary(r) for r in rows if r.agent == agent]
            if len(rows) < PAGE:
                break
            offset += PAGE
        return found[:limit]

    def get(self, agent: str, session_id: str, limit: int) -> SessionDetails:
        row = self.owned(agent, session_id)
        messages = self.runtime.gateway.session_messages(session_id)
        return SessionDetails(
            **summary(row).model_dump(),
            agent=agent,
            worker=self.worker_name,
            messages=[message(m) for m in messages[-limit:]],
        )

    def owned(self, agent: str, session_id: str) -> SessionRow:
        """The session, if ``session_id`` is one of ``agent``'s sessions."""
        row = self.runtime.gateway.get_session(session_id)
        if row is None or row.agent != agent:
            raise UnknownSession(f"session '{session_id}' not found for agent '{agent}' on worker '{self.worker_name}'")
        return row

    def chat_for(self, agent: str, session_id: Optional[str]) -> str:
        """The gateway chat carrying ``session_id``, rebinding it if needed; a new chat if None."""
        if not session_id:
            return "nf-" + uuid.uuid4().hex[:16]
        row = self.owned(agent, session_id)
        if row.source != PLATFORM or not row.chat_id:
            raise UnknownSession(
                f"session '{session_id}' of agent '{agent}' was not started through NorFab and cannot be continued; "
                "start a new session"
            )
        self.runtime.gateway.bind_chat(row.chat_id, agent, session_id)
        return row.chat_id

    def current(self, agent: str, chat_id: str) -> Optional[str]:
        """The session the agent's chat is on now."""
        return self.runtime.gateway.chat_session(chat_id, agent)


def _iso(timestamp: Any) -> Optional[str]:
    return datetime.fromtimestamp(float(timestamp), timezone.utc).isoformat() if timestamp else None


def summary(row: SessionRow) -> SessionSummary:
    return SessionSummary(
        session_id=row.session_id,
        title=row.title,
        source=row.source,
        started=_iso(row.started),
        last_active=_iso(row.last_active),
        message_count=row.message_count,
        preview=row.preview,
    )


def message(row: MessageRow) -> SessionMessage:
    return SessionMessage(
        role=row.role,
        content=row.content,
        tool_calls=row.tool_calls,
        tool_name=row.tool_name,
        timestamp=_iso(row.timestamp),
    )
