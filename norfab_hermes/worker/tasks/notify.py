"""The notify task: the worker's notification channels, and a test message through one of them."""

from typing import Optional

from norfab.models import Result

from ...models import NotifyInput, NotifyResult, NotifyResultData
from .base import REST, HermesTask
from .mixin import TaskMixin


class NotifyTasks(TaskMixin):
    @HermesTask(input=NotifyInput, output=NotifyResult, fastapi=REST, mcp=False, agent={"enabled": False})
    def notify(
        self, action: str = "status", channel: Optional[str] = None, timeout: float = 15.0, text: Optional[str] = None
    ) -> Result:
        """
        The worker's notification channels (webhook, email, Matrix): their health, outbox and dead letters;
        or a test message sent through one of them, waited for.

        Args:
            action: status, or test.
            channel: test: the channel's name (notify.channels in the worker's inventory).
            timeout: test: seconds to wait for the channel to take the message.
            text: test: a line the message carries (to tell test messages apart).

        Returns:
            Result whose ``result`` holds each channel's status and, for test, what became of the message
            (sent; waiting: not taken in time, it stays in the outbox; dead; not_running) and the error.
        """
        notifier = self.running_host().notifier
        test = notifier.test(channel or "", timeout, text) if action == "test" else None
        return Result(result=NotifyResultData(worker=self.name, channels=notifier.status(), test=test).model_dump())
