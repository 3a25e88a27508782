"""
Fakes of the NorFab client for unit tests: a broker that lists hermes
workers and hermes workers that answer tasks from plain data, the way the
real ones shape their replies (``show_workers`` rows, NorFab Result dicts).
"""

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Set, Tuple

from norfab_hermes.errors import UnknownApproval, UnknownRun, failure


def ok(result: Any) -> Dict[str, Any]:
    return {"failed": False, "errors": [], "result": result, "status": "completed"}


def failed(message: str) -> Dict[str, Any]:
    return {"failed": True, "errors": [message], "result": None, "status": "failed"}


def unknown_here(error: type, kind: str, ident: str, worker: str) -> Dict[str, Any]:
    """How a hermes worker answers a run or approval id that is not its own: the error's code in the result."""
    return failure(f"{kind} '{ident}' is not known on worker '{worker}'", error.code)


@dataclass
class FakeWorker:
    """What one hermes worker serves."""

    agents: List[str] = field(default_factory=list)
    status: str = "alive"
    sessions: Set[Tuple[str, str]] = field(default_factory=set)  # (agent, session_id)
    active_runs: Set[Tuple[str, str]] = field(default_factory=set)  # (agent, run_id)
    runs: Set[str] = field(default_factory=set)  # run ids it ran, finished ones too
    approvals: Set[str] = field(default_factory=set)
    broken: Optional[str] = None  # every task fails with this message
    gone: bool = False  # listed alive, but left the broker: a job that includes it fails as a whole


class FakeJobs:
    """The client's local job store (``job_db``): the invokes it sent, newest first."""

    def __init__(self) -> None:
        self.invokes: List[Dict[str, Any]] = []

    def fetch_jobs(self, service: str, task: str, last: int) -> List[Dict[str, Any]]:
        return self.invokes[:last] if (service, task) == ("hermes", "invoke") else []


class FakeClient:
    """An NFPClient with a broker and hermes workers made of data; records every job it sends."""

    def __init__(self, workers: Dict[str, FakeWorker], broker_errors: Optional[List[str]] = None) -> None:
        self.workers = workers
        self.broker_errors = broker_errors or []
        self.jobs: List[Tuple[str, List[str], Dict[str, Any]]] = []  # (task, workers, kwargs)
        self.job_db = FakeJobs()

    def mmi(self, service: str, command: str, kwargs: Dict[str, Any], timeout: float) -> Dict[str, Any]:
        assert (service, command, kwargs) == ("mmi.service.broker", "show_workers", {"service": "hermes"})
        if self.broker_errors:
            return {"status": "500", "errors": self.broker_errors, "results": []}
        rows = [{"name": name, "status": worker.status, "service": "hermes"} for name, worker in self.workers.items()]
        return {"status": "200", "errors": [], "results": rows}

    def run_job(
        self, service: str, task: str, kwargs: Dict[str, Any], workers: List[str], timeout: float
    ) -> Dict[str, Dict[str, Any]]:
        assert service == "hermes"
        self.jobs.append((task, list(workers), dict(kwargs)))
        if any(self.workers[name].gone for name in workers):
            return None
        return {name: self.answer(name, task, kwargs) for name in workers if self.workers[name].status == "alive"}

    def tasks(self, task: str) -> List[List[str]]:
        """The workers each job of ``task`` was sent to, in order."""
        return [workers for sent, workers, _ in self.jobs if sent == task]

    def answer(self, name: str, task: str, kwargs: Dict[str, Any]) -> Dict[str, Any]:
        worker = self.workers[name]
        if worker.broken:
            return failed(worker.broken)
        if task == "get_agents":  # sorted by name, as a worker lists them
            return ok(
                [
                    {"name": agent, "description": agent, "available": True, "worker": name}
                    for agent in sorted(worker.agents)
                ]
            )
        if task == "get_session":
            owned = (kwargs["agent"], kwargs["session_id"]) in worker.sessions
            return ok({"session_id": kwargs["session_id"]}) if owned else failed("unknown session")
        if task == "get_status":
            runs = [
                {"run_id": run, "agent": agent, "started": "2026-12-01T00:00:00+00:00"}
                for agent, run in sorted(worker.active_runs)
            ]
            return ok({"ready": True, "max_concurrent_runs": 4, "active_runs": runs})
        if task == "get_run":
            if kwargs["run_id"] in worker.runs:
                return ok({"run_id": kwargs["run_id"], "state": "finished"})
            return unknown_here(UnknownRun, "run", kwargs["run_id"], name)
        if task in ("approve", "deny"):
            if kwargs["approval_id"] in worker.approvals:
                return ok({"approval_id": kwargs["approval_id"], "decision": task})
            return unknown_here(UnknownApproval, "approval", kwargs["approval_id"], name)
        return ok({"task": task, "worker": name, **kwargs})
