"""
What leaves the Hermes seam: this project's typed records of a turn, a
model answer's usage, a session, a message and a scheduled job, built from Hermes' dicts by
``compat`` and ``cron``. Plain data: no Hermes import.
"""

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional


@dataclass(frozen=True)
class TurnResult:
    """What Hermes reported of one agent turn (its ``run_conversation`` result)."""

    reported: bool = False  # False: no result at all (the turn was given up on, or failed before Hermes answered)
    final_response: str = ""
    error: Optional[str] = None  # the provider's error, after Hermes' retries
    interrupted: bool = False
    completed: Optional[bool] = None
    failed: bool = False
    api_calls: int = 0  # requests of the agent's own tool loop
    session_id: Optional[str] = None
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    cost_usd: Optional[float] = None  # when the provider's pricing is known


@dataclass(frozen=True)
class ModelUsage:
    """One model answer's tokens as the provider reported them (Hermes' ``post_api_request`` hook)."""

    model: Optional[str]
    prompt_tokens: int  # cache reads and writes included: the provider bills them
    completion_tokens: int


@dataclass(frozen=True)
class SessionRow:
    """One session as Hermes' session store lists it."""

    session_id: str
    agent: str  # the profile that owns it
    source: Optional[str]  # the platform it started on: norfab, cron, ...
    chat_id: Optional[str]
    title: Optional[str]
    started: Optional[float]  # seconds since the epoch
    last_active: Optional[float]
    message_count: int
    preview: Optional[str]


@dataclass(frozen=True)
class MessageRow:
    """One message of a session's transcript."""

    role: str
    content: Optional[str]
    tool_calls: List[Dict[str, Any]]  # name and arguments of each call
    tool_name: Optional[str]
    timestamp: Optional[float]


@dataclass(frozen=True)
class CronJob:
    """One schedule of a profile's Hermes cron store."""

    id: str
    name: str
    prompt: str
    schedule: Dict[str, Any]  # Hermes' parsed schedule, handed back to it as it is
    display: str  # the schedule as Hermes shows it
    state: Optional[str]
    enabled: bool  # enabled and not paused
    next_run_at: Optional[str]  # ISO times, Hermes' clock
    last_run_at: Optional[str]
    last_status: Optional[str]
    repeat_times: Optional[int]
    runs: int  # runs so far
    origin_chat_id: Optional[str]  # the chat that created it, when a model did in chat
    skills: List[str]
    host_fields: List[str]  # HOST_FIELDS the job sets
    raw: Dict[str, Any] = field(repr=False, compare=False)  # Hermes' own dict, for its prompt builder
