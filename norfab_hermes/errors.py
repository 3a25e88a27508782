"""
Errors a caller can fix. A task that raises one of these returns a failed
``Result`` whose message says what is wrong and how to fix it; anything else
raised inside the worker is a bug: it is logged with its traceback and the
caller is told that an internal error happened, never a traceback.

Each error has a machine-readable ``code``, carried in the failed Result as
``result: {code, error}`` (the text stays in ``errors`` for people; NorFab's
``status`` is a closed set and says ``failed``): clients such as the routing
helper match codes, never message text.

Pure: imported by models, the worker and the client side alike.
"""

from typing import Optional

INTERNAL_ERROR = "internal_error"  # a bug in the worker: logged there with its traceback
UNKNOWN_TASK = "unknown_task"  # a task name the hermes service does not have


class HermesError(Exception):
    """Base of every caller error of the hermes service; the message is for the caller."""

    code = "error"

    def __init__(self, message: str, code: Optional[str] = None) -> None:
        super().__init__(message)
        self.code = code or type(self).code


class InvalidRequest(HermesError, ValueError):
    """Task input the worker cannot act on; the message names the field and the fix."""

    code = "invalid_request"


class InventoryError(InvalidRequest):
    """Invalid hermes worker inventory or agent definition; the message names the agent and field."""

    code = "invalid_definition"


class AgentUnavailable(HermesError, LookupError):
    """The named agent does not exist on this worker or cannot take runs."""

    code = "agent_unavailable"


class UnknownSession(HermesError, LookupError):
    """The session id is not one of the agent's sessions on this worker."""

    code = "unknown_session"


class UnknownSchedule(HermesError, LookupError):
    """The schedule id or name is not one of the agent's schedules on this worker."""

    code = "unknown_schedule"


class UnknownApproval(HermesError, LookupError):
    """The approval id is not known on this worker (another worker's, or long decided)."""

    code = "unknown_approval"


class UnknownOutcome(HermesError, LookupError):
    """The outcome id is not an unacknowledged change of this worker."""

    code = "unknown_outcome"


class UnknownRun(HermesError, LookupError):
    """The run id is not running on this worker."""

    code = "unknown_run"


class UnknownArtifact(HermesError, LookupError):
    """The artifact id is not one of the agent's kept artifacts (another agent's, or past its retention)."""

    code = "unknown_artifact"


class Busy(HermesError):
    """Every run slot and queue place of the worker is taken, a session stayed busy, or an agent
    started its max_runs_per_minute."""

    code = "busy"


class NotAllowed(HermesError, PermissionError):
    """The caller may not do this, e.g. decide an approval whose approvers do not include it."""

    code = "not_allowed"


class OverBudget(HermesError):
    """The agent's daily token or cost budget is spent: no run starts until the next day (UTC)."""

    code = "over_budget"


class RecordsUnavailable(HermesError):
    """The shared records database (records.backend postgresql) does not answer, or its schema is
    newer than this worker: what needs a record or a device lock is refused until it does."""

    code = "records_unavailable"


RUN_FINISHED = "run_finished"  # the run exists on this worker and has ended (UnknownRun with this code)
# codes that mean "not this worker's": a client asking every worker keeps looking
NOT_HERE = {UnknownRun.code, UnknownApproval.code, UnknownOutcome.code}


def failure(message: str, code: str) -> dict:
    """The keyword arguments of a failed NorFab Result: the text for people, the code for programs."""
    return {
        "failed": True,
        "errors": [message],
        "messages": [message],
        "status": "failed",
        "result": {"code": code, "error": message},
    }


def error_code(result: Optional[dict]) -> Optional[str]:
    """The code of a failed Result as a client receives it (a dict), or None."""
    if not result or not result.get("failed"):
        return None
    return (result.get("result") or {}).get("code") if isinstance(result.get("result"), dict) else None
