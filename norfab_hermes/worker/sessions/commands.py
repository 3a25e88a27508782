"""
Native Hermes slash commands through NorFab: a supported command runs in the
agent's gateway chat, exactly as Hermes answers it on any platform.

Only the commands in ``models.SUPPORTED_COMMANDS`` pass; the rest act on the
host process, change what inventory owns, or start agent work outside a
run's budgets.
"""

import concurrent.futures
from typing import Optional

from ...errors import Busy, InvalidRequest
from ...models import SUPPORTED_COMMANDS, CommandResultData
from ..hermes.runtime import HermesRuntime
from .store import Sessions

COMMAND_TIMEOUT = 60.0
# arguments a supported command may take through NorFab ("" = none)
COMMAND_ARGUMENTS = {"memory": ("", "pending"), "usage": ("",)}


def parse(command: str) -> str:
    """The command normalised, if it is supported with these arguments; InvalidRequest says what is."""
    text = " ".join(command.split())
    name, _, arguments = text.lstrip("/").partition(" ")
    supported = ", ".join(f"/{c}" for c in SUPPORTED_COMMANDS)
    if not text.startswith("/") or name not in SUPPORTED_COMMANDS:
        raise InvalidRequest(f"command: '{text.split(' ')[0]}' is not a supported command; supported: {supported}")
    if arguments not in COMMAND_ARGUMENTS.get(name, (arguments,)):
        allowed = " or ".join(f"'/{name} {a}'".replace(" '", "'") for a in COMMAND_ARGUMENTS[name])
        raise InvalidRequest(f"command: '/{name} {arguments}' is not supported through NorFab; use {allowed}")
    return text


def run_command(
    runtime: HermesRuntime, sessions: Sessions, worker: str, agent: str, command: str, session_id: Optional[str]
) -> CommandResultData:
    """Run a supported command in the agent's (session's) gateway chat and return the gateway's answer."""
    text = parse(command)
    chat_id = sessions.chat_for(agent, session_id)
    future = runtime.send(agent, text, chat_id)
    try:
        turn = future.result(COMMAND_TIMEOUT)
    except concurrent.futures.TimeoutError:
        future.cancel()
        raise Busy(f"'{text}' got no answer from agent '{agent}' within {COMMAND_TIMEOUT:.0f}s") from None
    return CommandResultData(
        command=text,
        response=turn.reply or "\n".join(s["content"] for s in turn.sends),
        agent=agent,
        worker=worker,
        session_id=sessions.current(agent, chat_id),
    )
