"""
Fair admission of due schedule occurrences to the worker's run slots.

When more occurrences fall due than the worker has free run slots
(``max_concurrent_runs``), the rest wait here, each agent's in the order they
fell due, and are admitted one agent at a time in turn as slots free: an
agent with a hundred due schedules cannot keep another's one waiting behind
them. A waiting occurrence holds no run (its run budget starts when it is
admitted) and is never dropped: it runs, or, when the worker stops first, the
ticker records it as skipped.

Occurrences due together are handed over together: the ticker ticks their
agents' stores while nobody is admitted, and the queue takes them in turn
once all have reached it (``hand_over``).

``RoundRobin`` is the pure order; ``Admission`` adds the slots and the waiting.
"""

import contextlib
import threading
from collections import OrderedDict, deque
from typing import Callable, Deque, Dict, Generic, Iterator, Optional, Tuple, TypeVar

T = TypeVar("T")

POLL = 1.0  # seconds between checks of a waiting occurrence for a stop (a freed slot wakes it at once)
HAND_OVER = 2.0  # seconds a hand-over waits for the due jobs it dispatched to reach the queue


class RoundRobin(Generic[T]):
    """Waiting items by agent, taken one agent at a time in turn, each agent's oldest first."""

    def __init__(self) -> None:
        self._queues: "OrderedDict[str, Deque[T]]" = OrderedDict()  # the agent to serve next first

    def add(self, agent: str, item: T) -> None:
        """An agent new to the queue goes last in the turn; one already waiting keeps its place."""
        self._queues.setdefault(agent, deque()).append(item)

    def take(self) -> Optional[Tuple[str, T]]:
        """The next agent's oldest item; that agent goes to the end of the turn (None when nothing waits)."""
        if not self._queues:
            return None
        agent, queue = next(iter(self._queues.items()))
        item = queue.popleft()
        if queue:
            self._queues.move_to_end(agent)
        else:
            del self._queues[agent]
        return agent, item

    def remove(self, agent: str, item: T) -> bool:
        """Drop an item that stopped waiting; whether it was there."""
        queue = self._queues.get(agent)
        if queue is None or item not in queue:
            return False
        queue.remove(item)
        if not queue:
            del self._queues[agent]
        return True

    def waiting(self) -> Dict[str, int]:
        """Items waiting, by agent."""
        return {agent: len(queue) for agent, queue in self._queues.items()}

    def __len__(self) -> int:
        return sum(len(queue) for queue in self._queues.values())


class Ticket:
    """One occurrence asking for a run slot."""

    def __init__(self, agent: str) -> None:
        self.agent = agent
        self.admitted = threading.Event()


class Admission:
    """
    Due occurrences admitted to run slots in turn across agents.

    Args:
        take_slot: takes a free run slot of the worker at once, or answers False (never waits).
        give_slot: gives a slot taken by ``take_slot`` back.
    """

    def __init__(self, take_slot: Callable[[], bool], give_slot: Callable[[], None], poll: float = POLL) -> None:
        self.take_slot = take_slot
        self.give_slot = give_slot
        self.poll = poll
        self._lock = threading.RLock()  # give_slot may tell this admission again (``freed``) while it admits
        self._queue: RoundRobin[Ticket] = RoundRobin()
        self._held = 0  # passes of the ticker handing over due occurrences: nobody is admitted meanwhile
        self._arrival = threading.Condition()  # due jobs arrived so far (``arrived``), occurrences ``asking``
        self._arrived = 0
        self._asking = 0

    def hold(self) -> None:
        """Admit nobody until ``resume``: occurrences due together are queued together, then taken in turn
        (else the agents ticked first fill the free slots before the others reach the queue)."""
        with self._lock:
            self._held += 1

    def resume(self) -> None:
        with self._lock:
            self._held = max(0, self._held - 1)
            self._admit()

    def arrived(self) -> None:
        """A due job reached the worker (Hermes' cron handed it over): a hand-over waiting for it goes on."""
        with self._arrival:
            self._arrived += 1
            self._arrival.notify_all()

    def hand_over(self, dispatch: Callable[[], int], stopped: Callable[[], bool]) -> None:
        """``dispatch`` hands due jobs to Hermes' cron (and says how many); nobody is admitted until they all
        ``arrived`` (HAND_OVER at most): then the queue takes them in turn across agents. (Otherwise the agents
        dispatched first fill the free slots, and their runs slow the dispatch of the others.)"""
        with self._arrival:
            before = self._arrived
        self.hold()
        try:
            dispatched = dispatch()
            with self._arrival:  # Hermes' cron threads arrive soon after their dispatch
                self._arrival.wait_for(lambda: self._arrived - before >= dispatched or stopped(), HAND_OVER)
        finally:
            self.resume()

    def take(self, agent: str, queued: Callable[[int], None], stopped: Callable[[], bool]) -> bool:
        """A run slot for an occurrence of ``agent``: at once, or in turn after ``queued`` is told how many wait
        ahead of it. True holding the slot (``leave`` gives it back); False when the worker stopped first (no
        slot held: one freed by the stop's own interrupts goes back, no run starts now)."""
        ticket, ahead = self.enter(agent)
        if ticket.admitted.is_set():
            return True
        queued(ahead)
        admitted = self.wait(ticket, stopped)
        if admitted and stopped():
            self.leave()
            return False
        return admitted

    @contextlib.contextmanager
    def asking(self) -> Iterator[None]:
        """Around an occurrence's ``take`` and the record of what came of it: a stop's ``drain`` waits for it."""
        with self._arrival:
            self._asking += 1
        try:
            yield
        finally:
            with self._arrival:
                self._asking -= 1
                self._arrival.notify_all()

    def drain(self, timeout: float) -> None:
        """At a stop: wait, ``timeout`` at most, for the occurrences ``asking`` (a queued one sees the stop
        within a poll and records it was skipped)."""
        with self._arrival:
            self._arrival.wait_for(lambda: not self._asking, timeout)

    def enter(self, agent: str) -> Tuple[Ticket, int]:
        """Ask for a slot: the ticket, and how many occurrences wait ahead of it (0 once admitted)."""
        ticket = Ticket(agent)
        with self._lock:
            self._queue.add(agent, ticket)
            self._admit()
            return ticket, 0 if ticket.admitted.is_set() else len(self._queue) - 1

    def wait(self, ticket: Ticket, stopped: Callable[[], bool]) -> bool:
        """Wait for the ticket's turn: True holding a slot (give it back with ``leave``), False when stopped first."""
        while not ticket.admitted.wait(self.poll):
            with self._lock:
                self._admit()  # a slot freed by a run this admission was not told of
                if not ticket.admitted.is_set() and stopped():
                    self._queue.remove(ticket.agent, ticket)
                    return False
        return True

    def leave(self) -> None:
        """An admitted occurrence ended: its slot goes to the next in turn."""
        self.give_slot()
        self.freed()

    def freed(self) -> None:
        """A run slot was given back (by any run): admit whoever's turn it is."""
        with self._lock:
            self._admit()

    def waiting(self) -> Dict[str, int]:
        with self._lock:
            return self._queue.waiting()

    def _admit(self) -> None:
        while not self._held and len(self._queue) and self.take_slot():
            taken = self._queue.take()
            if taken is None:  # nothing waits after all (len said otherwise): the slot goes back
                self.give_slot()
                return
            taken[1].admitted.set()
