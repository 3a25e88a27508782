"""
What every ``nf# hermes`` command shares: the router over nfcli's NorFab
client, PICLE value handling, the ``workers`` option and the guard that turns
routing errors and Ctrl+C into messages.
"""

import builtins
import sys
from typing import Any, Dict, List, Optional

from pydantic import BaseModel, Field, StrictStr, field_validator
from rich.text import Text

from ..routing import Router, RoutingError
from .live import CtrlC, error_text
from .picle_compat import Maybe, read_line

TEXT_VERBS = ("invoke", "chat", "command", "session", "schedule")  # verbs whose values are free text


def router() -> Router:
    return Router(builtins.NFCLIENT)  # type: ignore[attr-defined]  # nfcli sets it in builtins at start-up


def positionals(value: Any) -> List[str]:
    """A verb field's values as strings (PICLE coerces bare values such as 007 or True)."""
    if value is None or value is True:
        return []
    return [str(item) for item in (value if isinstance(value, list) else [value])]


def as_str(value: Any) -> Optional[str]:
    return None if value is None else str(value)


def guarded(render: Any) -> Any:
    """Run a command body; a routing error becomes a red message, Ctrl+C cancels it (not nfcli)."""
    try:
        with CtrlC():
            return render()
    except RoutingError as error:
        return error_text([str(error)])
    except KeyboardInterrupt:
        return Text("cancelled; a job already sent finishes on its worker", style="yellow")


def misparsed(kwargs: Dict[str, Any]) -> Optional[Text]:
    """An unquoted keyword inside instructions starts that command; refuse rather than run it."""
    verbs = [verb for verb in TEXT_VERBS if kwargs.get(verb) is not None]
    if verbs:
        return error_text([f"'{verbs[0]}' takes quoted text: hermes {verbs[0]} AGENT \"TEXT WITH KEYWORDS\""])
    return None


def on_terminal() -> bool:
    try:
        return bool(sys.stdin and sys.stdin.isatty())
    except (AttributeError, ValueError):  # stdin replaced or closed
        return False


def confirm(app: Any, question: str) -> bool:
    """A yes/no line through PICLE's prompt; anything but y or yes, Ctrl+C and Ctrl+D are a no."""
    try:
        answer = read_line(app, question)
    except (KeyboardInterrupt, EOFError):
        return False
    return answer.strip().lower() in ("y", "yes")


def hint(text: str) -> Text:
    return Text(text, style="dim")


def agent_verb(description: str, key: str = "Agent name") -> Any:
    """The field of a verb taking AGENT, then its model's options (a PICLE key dict)."""
    return Field(None, description=description, json_schema_extra={"pkey": "agent", "pkey_description": key})


def agent_names(choice: Optional[str] = None) -> List[str]:
    """Agent names of every alive hermes worker starting with ``choice``, for completion."""
    try:
        replies = router().agents()
    except Exception:  # completion must never break the prompt
        return []
    names = {a["name"] for res in replies.values() if not res.get("failed") for a in res.get("result") or []}
    return sorted(name for name in names if not choice or name.startswith(choice))


class WorkersOption(BaseModel):
    workers: Optional[StrictStr] = Field(None, description="Hermes worker name or glob, e.g. hermes-lab-*")

    @staticmethod
    def source_workers() -> List[str]:
        try:
            return router().select()
        except Exception:  # completion must never break the prompt
            return []


class NoteOption(WorkersOption):
    """``(note "TEXT") (workers SELECTOR)``: commands that decide something and keep why."""

    # plain str: PICLE leaves such values alone; presence: a bare 'note' arrives as True and is refused
    note: Maybe[str] = Field(None, description="Why, for the record", json_schema_extra={"presence": True})

    @field_validator("note", mode="before")
    @classmethod
    def one_text(cls, value: Any) -> Any:
        """Unquoted words arrive as a list (validated only in the nf[hermes]# subshell)."""
        return "" if value is True else " ".join(map(str, value)) if isinstance(value, list) else value
