"""
Every budget of one run, counted and checked in one place: wall clock, model
requests (the agent's, its subagents' and Hermes' auxiliary ones), NorFab
tool calls, the same call repeated, devices reached, and changes made.

A check answers with the stop reason and message of the budget it breaks,
or None; the run stops on the first one (``Run``).
"""

import threading
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any, Optional, Set, Tuple

from ...models import AgentDefinition, HermesInventory, StopReason

Overrun = Optional[Tuple[StopReason, str]]
JOB_TIMEOUT_MARGIN = 3.0  # seconds between the end of a run budget and the NorFab job timeout


@dataclass(frozen=True)
class Limits:
    """What one run may spend."""

    seconds: float
    max_turns: int  # model requests
    max_calls: int = 30  # NorFab tool calls
    max_targets: int = 20  # distinct devices reached through nornir tools
    max_repeats: int = 3  # the same call with the same arguments
    max_changes: int = 5  # changes sent to devices (changes.max_per_run)

    @classmethod
    def of(
        cls, definition: AgentDefinition, inventory: HermesInventory, max_turns: int, timeout: Optional[float], job: Any
    ) -> "Limits":
        """An agent's limits for one run; a caller may ask for less time, never more, and the run
        ends before the caller's NorFab job stops waiting."""
        seconds = min(timeout or definition.run_timeout, definition.run_timeout)
        job_timeout = getattr(job, "timeout", None)
        if job_timeout:
            seconds = min(seconds, max(1.0, job_timeout - JOB_TIMEOUT_MARGIN))
        return cls(
            seconds=seconds,
            max_turns=max_turns,
            max_calls=definition.max_tool_calls or inventory.max_tool_calls,
            max_targets=definition.max_targets or inventory.max_targets,
            max_repeats=inventory.max_repeated_calls,
            max_changes=definition.changes.max_per_run,
        )


class Budget:
    """What one run has spent of its limits."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.started = time.time()
        self.deadline = self.started + limits.seconds
        self.model_requests = 0
        self.targets: Set[str] = set()
        self.changes = 0  # changes sent
        self._calls: Counter = Counter()  # (tool, arguments digest) -> times called
        self._lock = threading.Lock()

    def remaining(self) -> float:
        return max(0.0, self.deadline - time.time())

    def clock(self) -> Overrun:
        if time.time() > self.deadline:
            return StopReason.run_timeout, f"run budget of {self.limits.seconds:.0f}s spent"
        return None

    def model_request(self) -> Overrun:
        """Count one model request; the overrun when the run has none left."""
        with self._lock:
            if self.model_requests >= self.limits.max_turns:
                return StopReason.max_turns, f"model call budget of {self.limits.max_turns} spent"
            self.model_requests += 1
        return None

    def tool_call(self, tool: str, digest: str) -> Overrun:
        """Count one NorFab tool call; the overrun when it must not be made."""
        with self._lock:
            self._calls[(tool, digest)] += 1
            repeats, calls = self._calls[(tool, digest)], sum(self._calls.values())
        if repeats >= self.limits.max_repeats:
            return (
                StopReason.repeated_call,
                f"{tool} was called {repeats} times with the same arguments; the run stops instead of looping",
            )
        if calls > self.limits.max_calls:
            return StopReason.tool_budget, f"the run's budget of {self.limits.max_calls} tool calls is spent"
        return None

    def reached(self, devices: Set[str]) -> Overrun:
        """Devices a tool call reached; the overrun past the run's budget of devices."""
        with self._lock:
            self.targets |= devices
            touched = len(self.targets)
        if touched > self.limits.max_targets:
            return (
                StopReason.tool_budget,
                f"the run touched {touched} devices, over its budget of {self.limits.max_targets}",
            )
        return None

    def reserve_change(self) -> Optional[str]:
        """Hold one of the run's changes for a change call; why not when its budget is spent.

        A spent change budget refuses the change, not the run: the agent can
        still read devices and report. A change that is not sent after all
        gives its place back (``release_change``).
        """
        with self._lock:
            if self.changes >= self.limits.max_changes:
                return f"the run has made its {self.limits.max_changes} change(s) (changes.max_per_run)"
            self.changes += 1
        return None

    def release_change(self) -> None:
        with self._lock:
            self.changes -= 1
