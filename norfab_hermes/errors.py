"""
Errors a caller can fix. A task that raises one of these returns a failed
``Result`` whose message says what is wrong and how to fix it; anything else
raised inside the worker is a bug: it is logged with its traceback and the
caller is told that an internal error happened, never a traceback.

Pure: imported by models, the worker and the client side alike.
"""


class HermesError(Exception):
    """Base of every caller error of the hermes service; the message is for the caller."""


class InvalidRequest(HermesError, ValueError):
    """Task input the worker cannot act on; the message names the field and the fix."""


class InventoryError(InvalidRequest):
    """Invalid hermes worker inventory or agent definition; the message names the agent and field."""


class AgentUnavailable(HermesError, LookupError):
    """The named agent does not exist on this worker or cannot take runs."""


class UnknownSession(HermesError, LookupError):
    """The session id is not one of the agent's sessions on this worker."""


class UnknownSchedule(HermesError, LookupError):
    """The schedule id or name is not one of the agent's schedules on this worker."""


class UnknownApproval(HermesError, LookupError):
    """The approval id is not known on this worker (another worker's, or long decided)."""


class UnknownRun(HermesError, LookupError):
    """The run id is not running on this worker."""


class Busy(HermesError):
    """Every run slot and queue place of the worker is taken, or a session stayed busy."""
