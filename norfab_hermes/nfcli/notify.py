"""
``hermes notify``: the workers' notification channels (webhook, email,
Matrix), each one's health, outbox and dead letters; ``hermes notify test
CHANNEL`` sends a test message through one and says what became of it.
"""

from typing import Any, Dict, List, Optional

from pydantic import Field, StrictStr
from rich.console import Group, RenderableType
from rich.text import Text

from ..models import NotifyResultData
from .common import WorkersOption, as_str, guarded, misparsed, router
from .tables import table
from .views import channel_rows, failed

USAGE = """  hermes notify (workers SELECTOR)
  hermes notify test CHANNEL (text "LINE") (workers SELECTOR)
    test sends a message through CHANNEL on every selected worker that has it and waits for it"""


class HermesNotifyCommand(WorkersOption):
    test: Optional[StrictStr] = Field(None, description="CHANNEL - send a test message through it and wait for it")
    text: Optional[StrictStr] = Field(None, description="(test) a line the test message carries")

    @staticmethod
    def run(
        workers: Optional[str] = None, test: Optional[str] = None, text: Optional[str] = None, **kwargs: Any
    ) -> RenderableType:
        def render() -> RenderableType:
            routes = router()
            kwargs = {"action": "test", "channel": str(test), "text": text} if test else {"action": "status"}
            return notify_view(routes.call("notify", routes.select(as_str(workers)), kwargs, timeout=60))

        return misparsed(kwargs) or guarded(render)


def notify_view(replies: Dict[str, dict]) -> RenderableType:
    rows: List[List[Any]] = []
    lines: List[RenderableType] = []
    for worker, res in sorted(replies.items()):
        problem = failed(res)
        if problem:
            lines.append(Text.assemble(f"{worker}: ", problem))
            continue
        data = NotifyResultData.model_validate(res["result"])
        channels, errors = channel_rows(worker, data.channels)
        rows.extend(channels)
        lines.extend(errors)
        lines.extend(
            Text(f"{worker} {name}: dead letter {d.kind} ({d.key}) after {d.attempts} attempts: {d.error}", style="red")
            for name, channel in sorted(data.channels.items())
            for d in channel.dead_letters
        )
        if data.test:
            state, error = data.test["state"], data.test.get("error")
            style = "" if state == "sent" else "red"
            lines.append(Text(f"{worker}: test message {state}" + (f": {error}" if error else ""), style=style))
    return Group(
        table("notification channels", ["worker", "channel", "health", "waiting", "sent", "dead"], rows), *lines
    )
