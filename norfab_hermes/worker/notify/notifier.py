"""
The worker's notifier: what happened goes to the channels that carry it.

Events come from the approvals (the notifier is an ``ApprovalChannel``), the
schedules' history, the change runner, the daily budgets and the catalog.
Each becomes one ``Message`` queued in the outbox for every channel whose
``agents`` and ``events`` match, and each channel's delivery thread sends it
(``delivery.py``). Queuing is one local write; nothing here waits for a
channel, raises into the caller, or slows a run.

A channel that can read its users (Matrix) also hands their decisions to
``decide``: mapped to an operator by the channel, checked by the approvals
exactly as a decision from nf# is.
"""

import fnmatch
import logging
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

from ...errors import InvalidRequest
from ...models import (
    ApprovalInfo,
    ChangeRecord,
    ChannelStatus,
    DeadLetter,
    NotifySettings,
    OutcomeUnknown,
    ScheduleRun,
)
from ...models.notify import Channel
from . import messages
from .channel import Decide, Message, Transport
from .delivery import ChannelDelivery
from .outbox import NotifyOutbox

log = logging.getLogger(__name__)

FAILING_AFTER = 3  # failed runs in a row that make a schedule "failing"
STOP_WAIT = 5.0  # seconds a delivery thread gets to finish its send at worker stop


def transport_for(name: str, definition: Channel) -> Transport:
    """The transport of one channel definition (the Matrix library is imported only when one is declared)."""
    if definition.type == "webhook":
        from .webhook import WebhookTransport

        return WebhookTransport(name, definition)
    if definition.type == "email":
        from .email import EmailTransport

        return EmailTransport(name, definition)
    from .matrix import MatrixTransport

    return MatrixTransport(name, definition)


class Notifier:
    """
    Args:
        worker: the worker's name.
        root: the instance root (the outbox lives there).
        settings: the inventory's ``notify``.
    """

    def __init__(self, worker: str, root: Path, settings: NotifySettings) -> None:
        self.worker = worker
        self.settings = settings
        self.outbox = NotifyOutbox(root) if settings.channels else None
        self.deliveries: Dict[str, ChannelDelivery] = {}
        self.problems: Dict[str, str] = {}  # channel -> why it does not run (its transport could not be made)
        self.stopping = threading.Event()
        self._unavailable: Dict[str, str] = {}
        self._listeners: List[threading.Thread] = []

    def start(self, decide: Decide) -> None:
        """Make each channel's transport and start its delivery (and its listener, where it reads decisions)."""
        if self.outbox is None:
            return
        self.outbox.prune()
        for name, definition in self.settings.channels.items():
            try:
                transport = transport_for(name, definition)
            except Exception as error:  # a bad channel is reported, the others and the worker go on
                self.problems[name] = str(error)
                log.error(f"{self.worker} - Notification channel {name} does not run: {error}")
                continue
            delivery = ChannelDelivery(
                self.worker, transport, self.outbox, definition.per_minute, definition.max_attempts, self.stopping
            )
            self.deliveries[name] = delivery
            delivery.start()
            listen = getattr(transport, "listen", None)
            if listen is not None:
                thread = threading.Thread(
                    target=listen, args=(decide, self.stopping), name=f"{self.worker}-notify-{name}-listen", daemon=True
                )
                self._listeners.append(thread)
                thread.start()

    def stop(self) -> None:
        self.stopping.set()
        for delivery in self.deliveries.values():
            delivery.join(STOP_WAIT)
            delivery.transport.close()
        for thread in self._listeners:
            thread.join(STOP_WAIT)
        if self.outbox is not None:
            self.outbox.close()

    # ------------------------------------------------------------ events

    def send(self, message: Optional[Message]) -> None:
        """Queue ``message`` for every channel that carries it; never raises."""
        if message is None or self.outbox is None:
            return
        names = [
            name
            for name, definition in self.settings.channels.items()
            if message.kind in definition.events
            and (message.kind == "test" or any(fnmatch.fnmatchcase(message.agent, p) for p in definition.agents))
        ]
        if not names:
            return
        try:
            queued = self.outbox.put(names, message)
        except Exception:
            log.exception(f"{self.worker} - Could not queue notification {message.kind} ({message.key})")
            return
        for name in queued:
            delivery = self.deliveries.get(name)
            if delivery is not None:
                delivery.wake.set()

    def approval(self, info: ApprovalInfo, kind: str) -> None:
        """The approvals' channel: each step of each approval."""
        self.send(messages.approval(info, kind))

    def schedule_run(
        self, agent: str, run: ScheduleRun, recent: Callable[[str, Optional[str], int], List[ScheduleRun]]
    ) -> None:
        """A schedule's run as its history records it; ``recent(agent, schedule_id, n)`` its newest runs."""
        if run.status in ("regressed", "recovered"):
            self.send(messages.schedule_run(agent, self.worker, run, run.status))
        elif run.status == "failed" and self.outbox is not None:
            runs = recent(agent, run.schedule_id, FAILING_AFTER + 1)
            streak = 0
            for earlier in runs:
                if earlier.status != "failed":
                    break
                streak += 1
            if streak == FAILING_AFTER:  # told once per streak: when it reaches the count
                self.send(messages.schedule_run(agent, self.worker, run, "schedule_failing"))

    def change(self, agent: str, run_id: str, case: Optional[str], tool: str, job: str, record: ChangeRecord) -> None:
        if record.outcome in ("rolled_back", "outcome_unknown"):
            self.send(messages.change(agent, self.worker, run_id, case, tool, job, record))

    def cut_changes(self, changes: List[OutcomeUnknown]) -> None:
        for change in changes:
            self.send(messages.cut_change(self.worker, change))

    def budget(self, kind: str, agent: str, text: str, day: str) -> None:
        self.send(messages.budget(kind, agent, self.worker, text, day))

    def agents(self, errors: Dict[str, str]) -> None:
        """The catalog's unavailable agents: each new reason is told once."""
        for agent, reason in errors.items():
            if self._unavailable.get(agent) != reason:
                self._unavailable[agent] = reason
                self.send(messages.unavailable(agent, self.worker, reason))
        for agent in set(self._unavailable) - set(errors):
            del self._unavailable[agent]

    # ------------------------------------------------------------ operators

    def test(self, channel: str, timeout: float, text: Optional[str] = None) -> Dict[str, Any]:
        """Send a test message to ``channel`` and wait for it; what happened to it."""
        if channel not in self.settings.channels:
            raise InvalidRequest(
                f"channel: '{channel}' is not a notification channel of worker '{self.worker}': "
                f"use one of {sorted(self.settings.channels)} (notify.channels in its inventory)"
            )
        if channel in self.problems:
            return {"channel": channel, "state": "not_running", "error": self.problems[channel]}
        message = messages.test(channel, self.worker, text)
        assert self.outbox is not None  # a declared channel has one
        self.outbox.put([channel], message)
        self.deliveries[channel].wake.set()
        deadline, state = time.monotonic() + timeout, "waiting"
        while time.monotonic() < deadline:
            state = self.outbox.state(channel, message.key, message.kind) or "waiting"
            if state != "waiting":
                break
            time.sleep(0.1)
        delivery = self.deliveries[channel]
        return {"channel": channel, "state": state, "error": None if state == "sent" else delivery.last_error}

    def status(self) -> Dict[str, ChannelStatus]:
        """Each channel's health and outbox."""
        found: Dict[str, ChannelStatus] = {}
        for name, definition in self.settings.channels.items():
            delivery = self.deliveries.get(name)
            error = self.problems.get(name) or (delivery.last_error if delivery else None)
            health = "not_running" if name in self.problems else "failing" if error else "ok"
            dead = self.outbox.dead(name) if self.outbox is not None else []
            found[name] = ChannelStatus(
                type=definition.type,
                health=health,
                error=error,
                last_sent=iso(delivery.last_sent) if delivery else None,
                **(self.outbox.counts(name) if self.outbox is not None else {}),
                dead_letters=[
                    DeadLetter(key=row[1], kind=row[2], attempts=row[3], error=row[4], at=iso(row[5])) for row in dead
                ],
            )
        return found


def iso(moment: Optional[float]) -> Optional[str]:
    return datetime.fromtimestamp(moment, timezone.utc).isoformat(timespec="seconds") if moment else None
