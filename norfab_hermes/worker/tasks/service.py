"""Tasks about the worker itself: status, inventory, versions; and the shell task refused."""

import importlib.metadata
import os
import platform
import sys
import threading
from typing import Dict, List, Optional

from norfab.core.worker import Job
from norfab.models import Result

from ...errors import RecordsUnavailable
from ...models import (
    SUPPORTED_COMMANDS,
    ChangesStatus,
    GetInventoryResult,
    GetStatusInput,
    GetStatusResult,
    GetVersionResult,
    ReloadOperatorsResult,
    ReloadOperatorsResultData,
    SchedulerStatus,
    TaskInput,
    WorkerStatus,
)
from ...safety.redact import redact
from .base import READ_ONLY, REST, HermesTask
from .mixin import TaskMixin

VERSIONED_PACKAGES = ("norfab-hermes", "norfab", "hermes-agent", "picle", "pydantic")


class ServiceTasks(TaskMixin):
    @HermesTask(input=GetStatusInput, output=GetStatusResult, fastapi=REST, mcp=READ_ONLY)
    def get_status(self, agent: Optional[str] = None) -> Result:
        """
        Readiness, agents, active runs, scheduler health, daily budgets, errors, and the change envelope
        (device locks, open breakers, changes of unknown outcome) of this worker.

        Args:
            agent: only this agent's availability, runs and schedules.
        """
        host = self.host
        if agent is not None:
            self.running_host().catalog.require(agent)
        errors = list(self.init_errors) + (host.problems() if host else [])
        agents = host.availability() if host else {}
        runs = host.runs.active() if host else []
        budgets, changes, problem = {}, ChangesStatus(), None
        try:  # with the shared record these are read there: while it does not answer, the status says why
            budgets = host.budgets(agent) if host else {}
            changes = host.change_status(agent) if host else ChangesStatus()
        except RecordsUnavailable as error:
            problem = str(error)
        outbox = host.records.outbox if host else None
        return Result(
            result=WorkerStatus(
                ready=host is not None and not errors and not host.stopping.is_set(),
                errors=errors,
                agents={name: up for name, up in agents.items() if agent in (None, name)},
                active_runs=[run for run in runs if agent in (None, run.agent)],
                scheduler=host.schedules.status(agent) if host else SchedulerStatus(),
                budgets=budgets,
                changes=changes,
                max_concurrent_runs=host.inventory.max_concurrent_runs if host else 0,
                hermes_home=str(host.root) if host else None,
                commands=sorted(SUPPORTED_COMMANDS),
                pid=os.getpid(),
                threads=threading.active_count(),
                open_files=len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else 0,
                identity=self.identity_line(),
                records_waiting=outbox.waiting if outbox else 0,
                records_problem=problem,
                notify=host.notifier.status() if host else {},
            ).model_dump()
        )

    @HermesTask(input=TaskInput, output=ReloadOperatorsResult, fastapi=REST, mcp=False, agent={"enabled": False})
    def reload_operators(self) -> Result:
        """
        Read the operators (SSH keys and roles) from the worker's inventory again, without a restart:
        a removed key is refused from the next request on. Needs role admin once operators are set.
        """
        self.reload_identity()
        fingerprints: Dict[str, List[str]] = {name: [] for name in self.identity.operators}
        for key, name in self.identity.public_keys().items():
            fingerprints[name].append(key)
        return Result(
            result=ReloadOperatorsResultData(
                worker=self.name, operators=fingerprints, identity=self.identity_line()
            ).model_dump()
        )

    @HermesTask(input=TaskInput, output=GetInventoryResult, fastapi=REST, mcp=READ_ONLY)
    def get_inventory(self) -> Result:
        """This worker's inventory with secrets redacted."""
        return Result(result=redact(self.hermes_inventory))

    @HermesTask(input=TaskInput, output=GetVersionResult, fastapi=REST, mcp=READ_ONLY)
    def get_version(self) -> Result:
        """Versions of norfab-hermes, NorFab, Hermes Agent, PICLE and Python."""
        versions = {package: importlib.metadata.version(package) for package in VERSIONED_PACKAGES}
        versions.update(python=sys.version.split()[0], platform=platform.platform())
        return Result(result=versions)

    @HermesTask(fastapi=False, mcp=False, agent={"enabled": False})
    def run_shell_cmd(self, job: Job, command: Optional[str] = None, timeout: Optional[int] = None) -> Result:
        """Refused: a hermes worker never runs shell commands for callers."""
        message = "run_shell_cmd is disabled on hermes workers: no shell access to the worker host"
        return Result(failed=True, errors=[message], messages=[message], status="skipped")
