"""
One channel's delivery: a thread that takes the channel's messages from the
outbox oldest first and hands them to its transport, one at a time.

A send that raises is tried again after a backoff (1 s doubling up to a
minute) and, after the channel's ``max_attempts``, set aside as a dead
letter; the messages after it wait their turn meanwhile, so a channel that
comes back gets them in order. ``per_minute`` caps how fast it sends. None of
this runs on a run's thread: a channel that is slow or down slows no run.
"""

import logging
import threading
import time
from collections import deque
from typing import Deque, Optional

from .channel import Message, Transport
from .outbox import NotifyOutbox

log = logging.getLogger(__name__)

FIRST_RETRY = 1.0
LAST_RETRY = 60.0
IDLE = 5.0  # seconds a channel with nothing to send sleeps before it looks again (it is woken on a new message)


def retry_after(attempts: int) -> float:
    """Seconds before the next try of a message that failed ``attempts`` times."""
    return min(FIRST_RETRY * 2.0 ** max(attempts - 1, 0), LAST_RETRY)


class ChannelDelivery:
    """Sends one channel's messages until stopped."""

    def __init__(
        self,
        worker: str,
        transport: Transport,
        outbox: NotifyOutbox,
        per_minute: int,
        max_attempts: int,
        stopping: threading.Event,
    ) -> None:
        self.worker, self.transport, self.outbox = worker, transport, outbox
        self.name = transport.name
        self.per_minute, self.max_attempts = per_minute, max_attempts
        self.stopping = stopping
        self.wake = threading.Event()
        self.last_error: Optional[str] = None
        self.last_sent: Optional[float] = None
        self._sent: Deque[float] = deque()  # send times within the last minute
        self._thread = threading.Thread(target=self._deliver, name=f"{worker}-notify-{self.name}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def join(self, timeout: float) -> None:
        self.wake.set()
        self._thread.join(timeout)

    def _deliver(self) -> None:
        while not self.stopping.is_set():
            try:
                wait = self._next()
            except Exception:  # the outbox itself failed (disk): logged, tried again
                log.exception(f"{self.worker} - Notification channel {self.name} could not read its outbox")
                wait = IDLE
            if wait:
                self.wake.wait(wait)
                self.wake.clear()

    def _next(self) -> float:
        """Send the oldest waiting message if it is due; how long to wait before looking again (0: at once)."""
        first = self.outbox.first(self.name)
        if first is None:
            return IDLE
        seq, message, attempts, next_try = first
        now = time.time()
        while self._sent and self._sent[0] < now - 60:
            self._sent.popleft()
        if len(self._sent) >= self.per_minute:
            return self._sent[0] + 60 - now
        if next_try > now:
            return next_try - now
        self._send(seq, message, attempts)
        return 0

    def _send(self, seq: int, message: Message, attempts: int) -> None:
        self._sent.append(time.time())
        card = self.outbox.card(self.name, message.key) if self.transport.updates_in_place else None
        try:
            if card:
                self.transport.update(card, message)
                reference: Optional[str] = card
            else:
                reference = self.transport.send(message)
        except Exception as error:
            attempts += 1
            self.last_error = f"{type(error).__name__}: {error}"
            dead = attempts >= self.max_attempts
            self.outbox.failed(seq, self.last_error, None if dead else time.time() + retry_after(attempts))
            if dead:
                log.error(
                    f"{self.worker} - Notification {message.kind} ({message.key}) to channel {self.name} is a dead "
                    f"letter after {attempts} attempts: {self.last_error}"
                )
            else:
                log.warning(
                    f"{self.worker} - Notification channel {self.name} failed (attempt {attempts}, next in "
                    f"{retry_after(attempts):.0f}s): {self.last_error}"
                )
            return
        self.outbox.sent(seq, self.name, message.key, reference)
        self.last_error, self.last_sent = None, time.time()
