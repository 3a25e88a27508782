"""
``ChangeControl``: the change envelope of one worker, in one place for the
tools that change devices and the tasks that show and reset it.
"""

from pathlib import Path
from typing import Any, Dict, List, Optional

from ...models import BreakerState, ChangePolicy, ChangesStatus, OutcomeUnknown
from .breakers import Breakers
from .limits import ChangeLimits
from .locks import DeviceLocks, FleetDeviceLocks
from .outcomes import Outcomes

FOLDER = "norfab_changes"  # under the instance root


class ChangeControl:
    """Device locks, windows and limits, breakers and unknown outcomes of one worker."""

    def __init__(self, root: Path, worker_name: str, records_db: Any = None) -> None:
        """``records_db``: the records' database; a shared one (PostgreSQL) holds the device locks of the fleet."""
        folder = Path(root) / FOLDER
        shared = records_db is not None and records_db.shared
        self.locks = FleetDeviceLocks(records_db, worker_name) if shared else DeviceLocks()
        self.limits = ChangeLimits(folder / "changes_made.json")
        self.breakers = Breakers(folder / "breakers.json")
        self.outcomes = Outcomes(folder, worker_name)

    def refusal(
        self, agent: str, policy: ChangePolicy, tool: str, tool_windows: List[str], devices: List[str]
    ) -> Optional[str]:
        """Why a change of ``agent`` to ``devices`` may not run now; None when it may."""
        return (
            self.outcomes.blocking(devices)
            or self.breakers.refusal(agent)
            or self.limits.refusal(agent, policy, tool, tool_windows)
        )

    def reset_breaker(self, agent: str, policy: ChangePolicy, by: Optional[str], note: Optional[str]) -> BreakerState:
        return self.breakers.reset(agent, by, note, policy.breaker_after)

    def acknowledge(self, outcome_id: str, by: Optional[str], note: Optional[str]) -> OutcomeUnknown:
        return self.outcomes.acknowledge(outcome_id, by, note)

    def status(self, policies: Dict[str, ChangePolicy], agent: Optional[str] = None) -> ChangesStatus:
        shown = {name: p.breaker_after for name, p in policies.items() if agent in (None, name)}
        return ChangesStatus(
            locks=self.locks.held(agent),
            breakers=self.breakers.states(shown),
            outcome_unknown=self.outcomes.pending(agent),
        )
