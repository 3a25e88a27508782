"""
What a run is asked to do, and by whom: one frozen record, built where the
request arrives (the invoke and start_run tasks, a due schedule) and held by
the run for its whole life.
"""

from dataclasses import dataclass
from typing import Any, Dict, Optional

from ...models import Lineage


@dataclass(frozen=True)
class RunRequest:
    """One request for a run of ``agent``."""

    agent: str
    instructions: str
    session_id: Optional[str] = None  # continue this session; None starts a new one
    run_timeout: Optional[float] = None  # the caller's run budget, within the agent's run_timeout
    interactive: bool = False  # the caller answers questions and approvals as the run goes
    client: Optional[str] = None  # who asked: the verified operator, else the NorFab client's name
    dedupe_key: Optional[str] = None
    response_schema: Optional[Dict[str, Any]] = None  # the answer must match it (structured answers)
    case_id: Optional[str] = None  # the incident the caller ties the run to
    lineage: Optional[Lineage] = None  # the runs that asked for this one, when another agent asked
    schedule_id: Optional[str] = None  # the schedule whose occurrence this is
