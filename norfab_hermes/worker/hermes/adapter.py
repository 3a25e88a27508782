"""
The NorFab platform adapter: how NorFab requests enter the Hermes gateway.

The gateway creates one adapter per served profile (``platforms.norfab`` is
enabled in each agent profile's config). A request becomes a Hermes
``MessageEvent`` handed to ``handle_message``; everything the gateway says
back for that chat arrives through ``send``/``edit_message`` and is collected
into the :class:`Turn` until ``on_processing_complete`` closes it.

NorFab authenticates and routes callers before a request reaches the worker,
so authorization is upstream: the gateway does not run its own allowlists.
"""

import asyncio
import uuid
from typing import Any, Callable, Dict, List, Optional

from gateway.config import Platform
from gateway.platforms.base import (
    BasePlatformAdapter,
    MessageEvent,
    MessageType,
    SendResult,
)
from gateway.session import build_session_key

from . import compat, port
from .compat import PLATFORM, message_source


class Turn:
    """What the gateway sent back for one submitted message.

    ``on_text(message_id, text)`` sees every message of the turn as the gateway
    writes it: streamed replies arrive as a message edited with ever longer text.
    """

    def __init__(self, chat_id: str, on_text: Optional[Callable[[str, str], None]] = None) -> None:
        self.chat_id = chat_id
        self.on_text = on_text
        self.sends: List[Dict[str, Any]] = []
        self.outcome: Optional[str] = None
        self.done = asyncio.get_running_loop().create_future()

    def finish(self, outcome: Optional[str] = None) -> None:
        if not self.done.done():
            self.outcome = outcome
            self.done.set_result(self)

    @property
    def reply(self) -> str:
        """The last final message of the turn (progress edits excluded)."""
        finals = [s["content"] for s in self.sends if s.get("final")]
        return finals[-1] if finals else ""


class NorfabAdapter(BasePlatformAdapter):
    # a run ends with its NorFab job: nothing can be delivered after it, so Hermes runs
    # delegations synchronously and refuses background watchers (its stateless-channel path)
    supports_async_delivery = False
    interactive_resume = False
    MAX_MESSAGE_LENGTH = 10**9  # a NorFab result carries a reply of any length: never split it

    def __init__(self, config: Any) -> None:
        super().__init__(config=config, platform=Platform(PLATFORM))
        self._turns: Dict[str, Turn] = {}
        # commands answered inline while a turn runs in the same chat
        self._inline: Dict[str, Turn] = {}

    @property
    def authorization_is_upstream(self) -> bool:
        return True

    async def connect(self, *, is_reconnect: bool = False) -> bool:
        self._mark_connected()
        return True

    async def disconnect(self) -> None:
        for turn in [*self._turns.values(), *self._inline.values()]:
            turn.finish("disconnected")
        self._mark_disconnected()

    async def get_chat_info(self, chat_id: str) -> Dict[str, Any]:
        return {"name": chat_id, "type": "dm"}

    def _collect(self, chat_id: str, item: Dict[str, Any]) -> None:
        turn = self._inline.pop(chat_id, None)
        if turn is not None:
            turn.sends.append(item)
            turn.finish("inline")
            return
        turn = self._turns.get(chat_id)
        if turn is not None:
            turn.sends.append(item)
            if turn.on_text is not None and not item.get("final"):
                turn.on_text(item.get("edit_of") or item["message_id"], item["content"])

    async def send(
        self,
        chat_id: str,
        content: str,
        reply_to: Optional[str] = None,
        metadata: Optional[Dict[str, Any]] = None,
    ) -> SendResult:
        message_id = uuid.uuid4().hex[:12]
        final = bool((metadata or {}).get("notify"))
        self._collect(chat_id, {"content": content, "final": final, "message_id": message_id})
        return SendResult(success=True, message_id=message_id)

    async def edit_message(self, chat_id: str, message_id: str, content: str, *, finalize: bool = False) -> SendResult:
        self._collect(chat_id, {"content": content, "edit_of": message_id, "final": False})
        return SendResult(success=True, message_id=message_id)

    # Questions from a running agent go to the NorFab caller of that run
    # (job.request_input) on a worker thread; the agent thread waits on
    # Hermes' own clarify/approval entries until they are resolved here.

    async def send_clarify(
        self,
        chat_id: str,
        question: str,
        choices: Optional[List[Any]],
        clarify_id: str,
        session_key: str,
        metadata: Optional[Dict[str, Any]] = None,
    ) -> SendResult:
        asyncio.get_running_loop().run_in_executor(
            None, _answer_clarify, clarify_id, session_key, question, list(choices or [])
        )
        return SendResult(success=True, message_id=clarify_id)

    async def send_exec_approval(
        self,
        chat_id: str,
        command: str,
        session_key: str,
        description: str = "dangerous command",
        metadata: Optional[Dict[str, Any]] = None,
        allow_permanent: bool = True,
        smart_denied: bool = False,
    ) -> SendResult:
        asyncio.get_running_loop().run_in_executor(None, _answer_approval, session_key, command, description)
        return SendResult(success=True, message_id=uuid.uuid4().hex[:12])

    async def on_processing_complete(self, event: MessageEvent, outcome: Any) -> None:
        turn = self._turns.get(event.source.chat_id)
        if turn is not None:
            turn.finish(getattr(outcome, "value", str(outcome)))

    async def submit(
        self, text: str, chat_id: str, profile: str, on_text: Optional[Callable[[str, str], None]] = None
    ) -> Turn:
        """Hand ``text`` to the gateway as a message in ``chat_id``; the turn completes later."""
        source = message_source(chat_id, profile)
        event = MessageEvent(text=text, message_type=MessageType.TEXT, source=source, message_id=uuid.uuid4().hex[:12])
        turn = Turn(chat_id, on_text)
        if text.startswith("/") and compat.chat_is_busy(self, build_session_key(source)):
            # the gateway answers a command for a busy chat inline, with one
            # send and no processing-complete callback
            self._inline[chat_id] = turn
        else:
            self._turns[chat_id] = turn
            turn.done.add_done_callback(lambda _: self._forget(chat_id, turn))
        await self.handle_message(event)
        return turn

    def _forget(self, chat_id: str, turn: Turn) -> None:
        if self._turns.get(chat_id) is turn:
            del self._turns[chat_id]


def _ask(session_key: str, question: str, default: Any) -> Any:
    host = port.current()
    if host is None:
        raise PermissionError("the worker is shutting down")
    return host.ask_operator(session_key, question, default)


def _answer_clarify(clarify_id: str, session_key: str, question: str, choices: List[str]) -> None:
    from tools.clarify_gateway import resolve_gateway_clarify

    if choices:
        question = f"{question} (choices: {', '.join(choices)})"
    try:
        answer = str(_ask(session_key, question, choices[0] if choices else ""))
    except PermissionError as reason:
        answer = f"[the operator could not be asked: {reason}. Continue without the answer or say what you need.]"
    resolve_gateway_clarify(clarify_id, answer)


def _answer_approval(session_key: str, command: str, description: str) -> None:
    from tools.approval import resolve_gateway_approval

    try:
        allowed = _ask(session_key, f"Allow the agent to run `{command}` ({description})?", False) is True
    except PermissionError:
        allowed = False
    resolve_gateway_approval(session_key, "once" if allowed else "deny")
