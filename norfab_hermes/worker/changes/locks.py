"""
One change per device at a time, across the runs and agents of one worker.

A change takes the locks of every device it names, all or none, before its
preview and keeps them until it is verified (or rolled back), so no other
change of this worker touches those devices in between. A change that finds
a device locked waits, within its budget, and is refused naming the holder.
The locks live in this worker's memory: another hermes worker does not see
them (NorFab 0.25 has no lock across workers; see docs/safety.md).
"""

import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Callable, Dict, List, Optional

from ...models import DeviceLock

WAIT_STEP = 0.2  # seconds between looks at a stop while waiting


@dataclass(eq=False)
class Holder:
    """One change call holding device locks (each call its own, even within one run)."""

    run_id: str
    agent: str
    tool: str
    since: float = field(default_factory=time.time)

    def describe(self) -> str:
        taken = datetime.fromtimestamp(self.since, timezone.utc).isoformat(timespec="seconds")
        return f"run {self.run_id} of agent '{self.agent}' ({self.tool}, since {taken})"


class DeviceLocks:
    """Device locks of one worker."""

    def __init__(self) -> None:
        self._held: Dict[str, Holder] = {}
        self._changed = threading.Condition()

    def acquire(self, devices: List[str], holder: Holder, wait: float, stopped: Callable[[], bool]) -> Optional[str]:
        """Take every device's lock, or none; why not (naming the holder) after waiting up to ``wait`` s."""
        deadline = time.time() + max(wait, 0.0)
        with self._changed:
            while True:
                busy = [(device, self._held[device]) for device in devices if device in self._held]
                if not busy:
                    self._held.update({device: holder for device in devices})
                    return None
                left = deadline - time.time()
                if left <= 0 or stopped():
                    device, other = busy[0]
                    return f"device {device} is being changed by {other.describe()}; waited {wait:.0f}s"
                self._changed.wait(min(WAIT_STEP, left))

    def release(self, holder: Holder) -> None:
        with self._changed:
            for device in [d for d, h in self._held.items() if h is holder]:
                del self._held[device]
            self._changed.notify_all()

    def held(self, agent: Optional[str] = None) -> List[DeviceLock]:
        with self._changed:
            held = sorted(self._held.items())
        return [
            DeviceLock(
                device=device,
                run_id=h.run_id,
                agent=h.agent,
                tool=h.tool,
                since=datetime.fromtimestamp(h.since, timezone.utc).isoformat(timespec="seconds"),
            )
            for device, h in held
            if agent in (None, h.agent)
        ]
