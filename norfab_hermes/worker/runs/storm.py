"""
Alarm-storm control for one worker's agents. A request that carries the
``dedupe_key`` of a run its agent started within its ``dedupe_window`` gets
that run instead of a new one (the key outlives a restart: the run records
keep it), and an agent starts at most ``max_runs_per_minute`` runs on the
worker; one more is refused as busy.

With the fleet's record (PostgreSQL) a key holds across workers: admitting a
request with a key takes the key's lock in the database, so the run one
worker accepts is recorded before another worker looks the key up.
"""

import contextlib
import threading
import time
from collections import deque
from typing import Callable, ContextManager, Deque, Dict, Iterator, List, Optional, Tuple

from ...errors import Busy

MINUTE = 60.0

# recorded(agent, key, since): the run id the run records hold for the key since then, or None
Recorded = Callable[[str, str, float], Optional[str]]
# holding(names, wait): a block holding the fleet's locks of those names; whether they were taken
Holding = Callable[[List[str], float], ContextManager[bool]]
KEY_WAIT = 10.0  # seconds a request waits for another worker admitting the same key (milliseconds, normally)


def unshared(names: List[str], wait: float) -> ContextManager[bool]:
    return contextlib.nullcontext(True)  # one worker: its own admission lock is enough


class Ticket:
    """One request's admission: the earlier run it duplicates, or room for a new one."""

    def __init__(self, earlier: Optional[str]) -> None:
        self.earlier = earlier
        self.run_id: Optional[str] = None

    def started(self, run_id: str) -> None:
        """The new run was accepted: it counts against the rate and owns the key."""
        self.run_id = run_id


class Storm:
    """Dedupe keys and runs per minute of one worker's agents."""

    def __init__(
        self, worker_name: str, recorded: Recorded = lambda agent, key, since: None, holding: Holding = unshared
    ) -> None:
        self.worker_name = worker_name
        self.recorded = recorded
        self.holding = holding
        self._keys: Dict[Tuple[str, str], Tuple[str, float]] = {}  # (agent, key) -> (run id, expires)
        self._starts: Dict[str, Deque[float]] = {}  # agent -> when its runs of the last minute started
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def admission(self, agent: str, key: Optional[str], window: float, per_minute: Optional[int]) -> Iterator[Ticket]:
        """Admit one request of ``agent``; requests of the worker are admitted one at a time.

        The ticket names the earlier run a duplicate gets; otherwise the caller
        accepts a new run and reports it with ``ticket.started``. Busy when the
        agent already started ``per_minute`` runs in the last minute.
        """
        now = time.time()
        names = [f"dedupe:{agent}:{key}"] if key and window > 0 else []
        with self._lock, self.holding(names, KEY_WAIT) as taken:
            if not taken:
                raise Busy(
                    f"another hermes worker is still admitting a request of agent '{agent}' with dedupe_key '{key}'"
                )
            self._keys = {k: v for k, v in self._keys.items() if v[1] > now}
            earlier = self._earlier(agent, key, window, now) if key else None
            starts = self._starts.setdefault(agent, deque())
            while starts and starts[0] <= now - MINUTE:
                starts.popleft()
            if earlier is None and per_minute is not None and len(starts) >= per_minute:
                retry = MINUTE - (now - starts[0])
                raise Busy(
                    f"agent '{agent}' started {len(starts)} runs in the last minute, its max_runs_per_minute on "
                    f"worker '{self.worker_name}'; retry in {retry:.0f}s, or give alarms of one incident one dedupe_key"
                )
            ticket = Ticket(earlier)
            yield ticket
            if ticket.run_id is not None:
                starts.append(now)
                if key and window > 0:
                    self._keys[(agent, key)] = (ticket.run_id, now + window)

    def _earlier(self, agent: str, key: str, window: float, now: float) -> Optional[str]:
        if window <= 0:
            return None
        known = self._keys.get((agent, key))
        return known[0] if known else self.recorded(agent, key, now - window)
