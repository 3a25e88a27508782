"""
The one place that touches NorFab internals (names NorFab 0.25 does not
document as its API), covered by ``tests/test_norfab_compat.py``.

Client and worker side both use it, so it imports only the pure ``errors``,
and NorFab's worker module only inside the functions that need it
(importing it sets SIGINT to ignored, which would break Ctrl+C in nfcli).
"""

import logging
import re
import uuid as uuids
from typing import Any, Dict, List, Optional

from .errors import UNKNOWN_TASK, failure
from .identity.gate import SIGNED

log = logging.getLogger(__name__)

NOT_IN_JOB_UUID = re.compile(r"[^A-Za-z0-9_-]+")
JOB_UUID_PART = 32  # characters of a name kept in a tool job's UUID


def worker_tasks() -> Dict[str, Dict[str, Any]]:
    """NorFab's process-wide task registry: task name -> {"function", "schema", ...}."""
    from norfab.core.worker import NORFAB_WORKER_TASKS

    tasks: Dict[str, Dict[str, Any]] = NORFAB_WORKER_TASKS
    return tasks


def answer_unknown_tasks(service: str) -> None:
    """A job for a task this worker does not have fails with one line, not NorFab's KeyError traceback.

    NorFab looks the task up with ``NORFAB_WORKER_TASKS[task]`` in
    ``NFPWorker.run_next_job``; the registry becomes a dict that answers a
    missing name with a task that says so.
    """
    import norfab.core.worker as worker_module
    from norfab.models import Result

    class Registry(Dict[str, Dict[str, Any]]):
        def __missing__(self, name: str) -> Dict[str, Any]:
            known = ", ".join(sorted(n for n in self if not n.startswith("_")))
            message = f"task '{name}' is not a task of service '{service}' (its tasks: {known})"

            def unknown(*args: Any, **kwargs: Any) -> Result:
                return Result(**failure(message, UNKNOWN_TASK))

            return {"function": unknown}

    if not isinstance(worker_module.NORFAB_WORKER_TASKS, Registry):
        worker_module.NORFAB_WORKER_TASKS = Registry(worker_module.NORFAB_WORKER_TASKS)


def forget_job(client: Any, uuid: str) -> None:
    """Drop a job from an NFPClient's store (memory and SQLite) once it is read.

    NFPClient keeps every job's arguments, events and raw result (device
    output, secrets included) with no setting to turn that off and no delete
    call in NorFab 0.25; the rows are deleted through its private
    ``job_db._transaction``, overwriting freed pages.
    """
    client.job_futures.pop(uuid, None)
    try:
        with client.job_db._transaction(write=True) as db:
            db.execute("PRAGMA secure_delete=ON")
            db.execute("DELETE FROM events WHERE job_uuid=?", (uuid,))
            db.execute("DELETE FROM jobs WHERE uuid=?", (uuid,))
    except Exception as error:  # never fail a caller over bookkeeping
        log.warning(f"Could not forget job {uuid}: {error!r}")


def job_pending(client: Any, service: str, uuid: str, timeout: float = 10.0) -> Optional[bool]:
    """Whether job ``uuid`` has not ended on any worker of ``service``; None when not every worker answered.

    NorFab 0.25's ``job_list`` task with a ``uuid`` lists that job whatever its state (its pending and
    completed filters apply only without one) and names a job that ended ``COMPLETED`` (failed ones
    too): any other status has not ended.
    """
    try:
        replies = client.run_job(service, "job_list", kwargs={"uuid": uuid}, workers="all", timeout=timeout)
    except Exception as error:  # the broker or the service did not answer: not known
        log.warning(f"Could not ask {service} about job {uuid}: {error!r}")
        return None
    if not replies or any(reply.get("failed") for reply in replies.values()):
        return None
    return any(job.get("status") != "COMPLETED" for reply in replies.values() for job in reply.get("result") or [])


def client_jobs(client: Any, service: str, task: str, last: int) -> List[Dict[str, Any]]:
    """The newest ``last`` jobs of ``service.task`` an NFPClient sent, newest first (its local store)."""
    return client.job_db.fetch_jobs(service=service, task=task, last=last) or []


def client_job_errors(client: Any, uuid: str) -> List[str]:
    """Why an NFPClient's job ended without a result: the errors its local store kept."""
    return list((client.job_db.get_job(uuid) or {}).get("errors") or [])


def client_of(job: Any) -> Optional[str]:
    """Who sent ``job``: the operator whose signed proof the worker verified, else the NorFab client's name.

    NorFab 0.25 carries no verified user: without operators the name is whatever the client chose.
    """
    signed = SIGNED.get()  # set by the worker for the task it runs, once the proof held
    return signed.operator if signed is not None else sender_of(job)


def sender_of(job: Any) -> Optional[str]:
    """The name the NorFab client that sent ``job`` gave itself (what a proof names as its client)."""
    address = getattr(job, "client_address", None)
    return address.decode(errors="replace") if isinstance(address, bytes) else address


def tool_job_uuid(run_id: str, agent: str, operator: Optional[str]) -> str:
    """The NorFab job UUID of a tool job a run sends: ``<run_id>.<agent>.<operator>.<12 hex>``.

    A network worker's job store and log then tell apart whose job it ran. NorFab 0.25 has no
    other place for it: a job is (uuid, client name, task, args, kwargs, timeout) on the worker,
    the request's other fields are dropped, and args and kwargs reach the task (nornir passes
    unknown kwargs on to the device connection, which rejects them). The client chooses the uuid
    (``submit_job(uuid=...)``) and the worker keeps it verbatim in its job store and in every log
    line of the job. Names are cut to letters, digits, ``_`` and ``-``.
    """
    parts = [NOT_IN_JOB_UUID.sub("_", str(part or "none"))[:JOB_UUID_PART] for part in (run_id, agent, operator)]
    return ".".join([*parts, uuids.uuid4().hex[:12]])
