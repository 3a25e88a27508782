"""
An agent's sessions as NorFab callers see them: listing, reading, and the
gateway chat that carries a session when a caller continues it.

Hermes keeps every profile's sessions in the instance root's ``state.db``;
a session belongs to the agent whose profile created it. A session is
continued by pointing its NorFab chat at it again.
"""

import json
import uuid
from datetime import datetime, timezone
from typing import Any, Dict, List, Optional

from ...errors import UnknownSession
from ...models import SessionDetails, SessionMessage, SessionSummary
from ..hermes import compat
from ..hermes.runtime import HermesRuntime

PAGE = 200  # state.db rows read at a time


class Sessions:
    """Sessions of the agents of one worker, read from Hermes' session store."""

    def __init__(self, worker_name: str, runtime: HermesRuntime) -> None:
        self.worker_name = worker_name
        self.runtime = runtime

    def list(self, agent: str, limit: int) -> List[SessionSummary]:
        """The agent's sessions, newest activity first (all profiles share one state.db)."""
        db = compat.session_db(self.runtime.runner)
        found: List[SessionSummary] = []
        offset = 0
        while len(found) < limit:
            rows = db.list_sessions_rich(limit=PAGE, offset=offset, order_by_last_active=True, compact_rows=True)
            found += [summary(r) for r in rows if (r.get("profile_name") or "default") == agent]
            if len(rows) < PAGE:
                break
            offset += PAGE
        return found[:limit]

    def get(self, agent: str, session_id: str, limit: int) -> SessionDetails:
        row = self.owned(agent, session_id)
        # session_meta rows are Hermes bookkeeping, not conversation
        messages = [
            m
            for m in compat.session_db(self.runtime.runner).get_messages(session_id)
            if m.get("role") != "session_meta"
        ]
        return SessionDetails(
            **summary(row).model_dump(),
            agent=agent,
            worker=self.worker_name,
            messages=[message(m) for m in messages[-limit:]],
        )

    def owned(self, agent: str, session_id: str) -> Dict[str, Any]:
        """The session row, if ``session_id`` is one of ``agent``'s sessions."""
        row = compat.session_db(self.runtime.runner).get_session(session_id)
        if not row or (row.get("profile_name") or "default") != agent:
            raise UnknownSession(f"session '{session_id}' not found for agent '{agent}' on worker '{self.worker_name}'")
        return row

    def chat_for(self, agent: str, session_id: Optional[str]) -> str:
        """The gateway chat carrying ``session_id``, rebinding it if needed; a new chat if None."""
        if not session_id:
            return "nf-" + uuid.uuid4().hex[:16]
        row = self.owned(agent, session_id)
        if row.get("source") != compat.PLATFORM or not row.get("chat_id"):
            raise UnknownSession(
                f"session '{session_id}' of agent '{agent}' was not started through NorFab and cannot be continued; "
                "start a new session"
            )
        compat.bind_chat(self.runtime.runner, compat.session_key(row["chat_id"], agent), session_id)
        return row["chat_id"]

    def current(self, agent: str, chat_id: str) -> Optional[str]:
        """The session the agent's chat is on now."""
        return compat.chat_session(self.runtime.runner, compat.session_key(chat_id, agent))


def _iso(timestamp: Any) -> Optional[str]:
    return datetime.fromtimestamp(float(timestamp), timezone.utc).isoformat() if timestamp else None


def summary(row: Dict[str, Any]) -> SessionSummary:
    return SessionSummary(
        session_id=row["id"],
        title=row.get("title"),
        source=row.get("source"),
        started=_iso(row.get("started_at")),
        last_active=_iso(row.get("last_active") or row.get("ended_at") or row.get("started_at")),
        message_count=row.get("message_count") or 0,
        preview=row.get("preview"),
    )


def message(row: Dict[str, Any]) -> SessionMessage:
    calls = row.get("tool_calls") or []
    if isinstance(calls, str):
        calls = json.loads(calls or "[]")
    return SessionMessage(
        role=row.get("role") or "unknown",
        content=row.get("content") if isinstance(row.get("content"), str) else json.dumps(row.get("content")),
        tool_calls=[
            {"name": (c.get("function") or {}).get("name"), "arguments": (c.get("function") or {}).get("arguments")}
            for c in calls
        ],
        tool_name=row.get("tool_name"),
        timestamp=_iso(row.get("timestamp")),
    )
