"""
Change windows and the hourly cap: when an agent may change devices, and how often.

A change outside every window of its agent (or of its tool, when the tool
has windows of its own) is refused with the next window. An agent that made
``changes.max_per_hour`` changes in the last hour waits for the oldest to
age out; the times are kept on disk, so a restart does not reset the count.
The cap per run is a run budget (``runs/budget.py``).
"""

import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Dict, List, Optional

from ...models import ChangePolicy
from ...safety import windows
from . import store

HOUR = 3600.0


class ChangeLimits:
    """Windows and hourly caps of one worker's agents."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._made: Dict[str, List[float]] = store.load(path, {})  # agent -> times of changes sent

    def refusal(self, agent: str, policy: ChangePolicy, tool: str, tool_windows: List[str]) -> Optional[str]:
        """Why the agent may not change devices now with ``tool``; None when it may."""
        zone = windows.time_zone(policy.timezone)
        now = datetime.now(timezone.utc)
        for whose, texts in ((f"agent '{agent}'", policy.windows), (f"tool {tool}", tool_windows)):
            closed = windows.refusal([windows.parse_window(t) for t in texts], zone, now, whose)
            if closed:
                return closed
        with self._lock:
            recent = [t for t in self._made.get(agent, []) if t > time.time() - HOUR]
        if len(recent) >= policy.max_per_hour:
            wait = min(recent) + HOUR - time.time()
            return (
                f"agent '{agent}' made {len(recent)} changes in the last hour, its limit (changes.max_per_hour); "
                f"the next is allowed in {wait / 60:.0f} min"
            )
        return None

    def count(self, agent: str) -> None:
        """One change of the agent was sent."""
        with self._lock:
            now = time.time()
            self._made[agent] = [t for t in self._made.get(agent, []) if t > now - HOUR] + [now]
            store.save(self.path, self._made)
