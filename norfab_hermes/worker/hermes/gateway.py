"""
The running Hermes gateway as the worker uses it: typed methods over the
multiplexed ``GatewayRunner``, which nothing outside ``worker/hermes/``
holds. Each method is one question or request of :mod:`compat` (where the
private Hermes names are), with the runner filled in; what leaves is this
project's typed records.
"""

from pathlib import Path
from typing import Any, Collection, Dict, List, Optional

from . import compat
from .records import MessageRow, SessionRow, TurnResult


class Gateway:
    """The gateway of one worker; built by the runtime around the runner it started."""

    def __init__(self, runner: Any) -> None:
        self._runner = runner

    # ------------------------------------------------------------- profiles

    async def start_profile(self, agent: str, home: Path) -> None:
        """Connect the agent's adapters (its profile's config is read now)."""
        await compat.start_profile(self._runner, agent, home)

    async def stop_profile(self, agent: str) -> None:
        """Disconnect the agent's adapters; its messages are refused from now on."""
        await compat.stop_profile(self._runner, agent)

    def adapter(self, agent: str) -> Optional[Any]:
        """The NorFab adapter serving ``agent``; None when it is not connected."""
        return compat.profile_adapter(self._runner, agent)

    def adapters(self, agent: str) -> Dict[Any, Any]:
        """Every live adapter of ``agent`` by platform (what Hermes' cron delivers through)."""
        return compat.profile_adapters(self._runner, agent)

    # ---------------------------------------------------------------- chats

    @staticmethod
    def session_key(chat_id: str, agent: str) -> str:
        """The gateway's key of a NorFab chat of ``agent``."""
        return compat.session_key(chat_id, agent)

    def chat_session(self, chat_id: str, agent: str) -> Optional[str]:
        """The session id the agent's chat is on now."""
        return self.key_session(compat.session_key(chat_id, agent))

    def key_session(self, session_key: str) -> Optional[str]:
        """The session id the chat of ``session_key`` is on now."""
        return compat.chat_session(self._runner, session_key)

    def bind_chat(self, chat_id: str, agent: str, session_id: str) -> None:
        """Point the agent's chat at ``session_id``: its next turn continues that session."""
        compat.bind_chat(self._runner, compat.session_key(chat_id, agent), session_id)

    # ---------------------------------------------------------------- turns

    def take_turn_result(self, session_key: str) -> TurnResult:
        """The chat's last turn result, removed (an empty one when there is none)."""
        return compat.take_turn_result(self._runner, session_key)

    def running_agent(self, session_key: str) -> Optional[Any]:
        """The Hermes agent running the chat's turn; None before it exists."""
        return compat.running_agent(self._runner, session_key)

    def tune_running_agent(self, session_key: str) -> None:
        """Settings the gateway does not expose, on the agent running the chat's turn."""
        agent = self.running_agent(session_key)
        if agent is not None:
            compat.tune(agent)

    def close_unanswered_turn(self, session_id: Optional[str], note: str) -> bool:
        """``note`` as the assistant's reply when the session's last turn has none."""
        return compat.close_unanswered_turn(self._runner, session_id, note)

    def settle_cut_turns(self, home: Path, cut_keys: Collection[str], note: str) -> List[str]:
        """Before the gateway starts: cut turns are noted, never resumed; the noted session ids."""
        return compat.settle_cut_turns(self._runner, home, cut_keys, note)

    # ------------------------------------------------------------- sessions

    def list_sessions(self, offset: int, limit: int) -> List[SessionRow]:
        """Sessions of every agent, newest activity first."""
        return compat.list_sessions(self._runner, offset, limit)

    def get_session(self, session_id: str) -> Optional[SessionRow]:
        return compat.get_session(self._runner, session_id)

    def session_messages(self, session_id: str) -> List[MessageRow]:
        """The session's transcript, oldest first."""
        return compat.session_messages(self._runner, session_id)
