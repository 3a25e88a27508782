"""
Circuit breakers: an agent whose changes keep failing their verification
stops changing devices until an operator resets it.

Each agent counts its failed verifications in a row; a passed one starts the
count again. At the agent's ``changes.breaker_after`` the breaker opens and
every change of that agent is refused, across runs and restarts (the state
is kept on disk), until ``reset_breaker``.
"""

import threading
from pathlib import Path
from typing import Any, Dict, List, Optional

from ...errors import InvalidRequest
from ...models import BreakerState, now_iso
from . import store


class Breakers:
    """The breakers of one worker's agents."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._states: Dict[str, Dict[str, Any]] = store.load(path, {})

    def refusal(self, agent: str) -> Optional[str]:
        with self._lock:
            state = self._states.get(agent) or {}
        if not state.get("open"):
            return None
        return (
            f"changes of agent '{agent}' are stopped: {state['failures']} verifications failed in a row "
            f"(breaker open since {state['opened']}); an operator must reset it (nf# hermes reset-breaker {agent})"
        )

    def record(self, agent: str, passed: bool, threshold: int) -> Optional[str]:
        """Count one verification; the message when this one opens the breaker."""
        with self._lock:
            state = self._states.setdefault(agent, {"failures": 0, "open": False})
            state["failures"] = 0 if passed else state["failures"] + 1
            opens = not passed and not state["open"] and state["failures"] >= threshold
            if opens:
                state.update(open=True, opened=now_iso())
            store.save(self.path, self._states)
        if opens:
            return f"{threshold} verifications of agent '{agent}' failed in a row: its changes are stopped until an operator resets the breaker"
        return None

    def reset(self, agent: str, by: Optional[str], note: Optional[str], threshold: int) -> BreakerState:
        with self._lock:
            state = self._states.get(agent)
            if not state or not (state.get("open") or state.get("failures")):
                raise InvalidRequest(f"agent: the breaker of agent '{agent}' is closed with no failed verification")
            state.update(failures=0, open=False, opened=None, reset_by=by, note=note)
            store.save(self.path, self._states)
            return self._state(agent, state, threshold)

    def states(self, thresholds: Dict[str, int]) -> List[BreakerState]:
        """Agents with failed verifications or an open breaker (``thresholds``: the agents to show)."""
        with self._lock:
            return [
                self._state(agent, state, thresholds[agent])
                for agent, state in sorted(self._states.items())
                if agent in thresholds and (state.get("failures") or state.get("open"))
            ]

    @staticmethod
    def _state(agent: str, state: Dict[str, Any], threshold: int) -> BreakerState:
        return BreakerState(
            agent=agent,
            failures=state.get("failures", 0),
            threshold=threshold,
            open=bool(state.get("open")),
            opened=state.get("opened"),
            reset_by=state.get("reset_by"),
            note=state.get("note"),
        )
