"""
``HermesTask``: NorFab's ``@Task`` with clean answers.

NorFab validates a task's input in the task's wrapper and turns any
exception into a failed Result whose errors hold the Python traceback, so a
caller who misspells an argument reads pydantic's long text and a
traceback. This subclass puts one more wrapper around NorFab's:

* invalid input and caller errors (``errors.HermesError``) become a failed
  Result with one line that names the field and the fix;
* anything else is a bug: logged here with its traceback, reported to the
  caller as an internal error of the worker, without the traceback.
"""

import functools
import logging
from typing import Any, Callable, Dict, List, Optional

from norfab.core.worker import Task
from norfab.models import Result
from pydantic import ValidationError

from ...errors import INTERNAL_ERROR, HermesError, InvalidRequest, NotAllowed, failure
from ...identity import ProofRefused
from ...identity.gate import SIGNED
from ...models import describe_validation_error
from ...norfab_compat import sender_of, worker_tasks

log = logging.getLogger(__name__)

INJECTED = ("job", "progress")  # NorFab passes these; they are no caller input

# How a task shows in NorFab's REST (fastapi) and MCP (fastmcp) services. Every REST route is a
# POST: NorFab's routes read a JSON body, which many clients cannot send with a GET.
REST = {"methods": ["POST"]}
READ_ONLY = {"annotations": {"readOnlyHint": True, "idempotentHint": True, "openWorldHint": False}}
STARTS_RUN = {
    "annotations": {"readOnlyHint": False, "destructiveHint": False, "idempotentHint": False, "openWorldHint": True}
}
STOPS_RUN = {
    "annotations": {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": True, "openWorldHint": False}
}
APPROVES = {
    "annotations": {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": False, "openWorldHint": True}
}
DENIES = {
    "annotations": {"readOnlyHint": False, "destructiveHint": False, "idempotentHint": False, "openWorldHint": False}
}
# NorFab's own worker tasks that REST and MCP clients of a hermes worker do not get: other jobs'
# arguments and results, logs, file deletion, worker internals. NorFab clients still call them.
HIDDEN_BUILTINS = (
    "job_details",
    "job_list",
    "get_logs",
    "echo",
    "delete_fetched_files",
    "get_worker_status",
    "get_stats",
    "get_watchdog_configuration",
)


def hide_builtin_tasks() -> None:
    """Take NorFab's own tasks off this worker process's REST routes and MCP tools."""
    for name in HIDDEN_BUILTINS:
        entry = worker_tasks().get(name)
        if entry is not None:
            entry["schema"]["fastapi"] = False
            entry["schema"]["mcp"] = False


def signed_subject() -> Optional[str]:
    """The digest the current request's proof signs as its subject (a decision's change), if any."""
    signed = SIGNED.get()
    return signed.subject if signed else None


def failed(message: str, code: str) -> Result:
    """A failed Result: one line for people, its code (errors.py) for programs."""
    return Result(**failure(message, code))


class HermesTask(Task):
    """``@Task`` for hermes workers: same arguments, clean failed Results."""

    def __call__(self, function: Callable[..., Any]) -> Callable[..., Any]:
        norfab_wrapper = super().__call__(function)
        name = function.__name__

        @functools.wraps(function)
        def answering(*args: Any, **kwargs: Any) -> Result:
            proof = kwargs.pop("proof", None)
            worker = args[0] if args else None
            gate = getattr(worker, "identity", None)
            job = kwargs.get("job")  # NorFab's Job: who sent it, under the name it chose
            signed = None
            if worker is not None and gate is not None and gate.enabled:
                arguments = {k: v for k, v in kwargs.items() if k not in INJECTED}
                try:
                    signed = gate.check(name, arguments, sender_of(job), proof, job=getattr(job, "juuid", None) or "")
                except ProofRefused as refused:
                    worker.refused_request(name, arguments, sender_of(job), refused)
                    return failed(str(refused), NotAllowed.code)
            token = SIGNED.set(signed)
            try:
                return norfab_wrapper(*args, **kwargs)
            except ValidationError as error:
                return failed(describe_validation_error(error, name, unknown="argument"), InvalidRequest.code)
            except HermesError as error:
                return failed(str(error), error.code)
            except Exception as error:
                worker = getattr(args[0], "name", "hermes") if args else "hermes"
                log.exception(f"{worker} - Internal error in task '{name}'")
                return failed(
                    f"internal error in hermes worker '{worker}' running {name} ({type(error).__name__}); "
                    "the worker log has the details",
                    INTERNAL_ERROR,
                )
            finally:
                SIGNED.reset(token)

        worker_tasks().update(self.make_task_schema(answering))
        return answering

    def validate_input(self, args: List[Any], kwargs: Dict[str, Any]) -> None:
        # NorFab's own arguments are not the caller's; everything else must be declared
        merged = self.merge_args_to_kwargs(args, kwargs)
        self.input(**{k: v for k, v in merged.items() if k not in INJECTED})
