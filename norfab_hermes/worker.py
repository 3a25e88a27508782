"""
The ``hermes`` NorFab worker: NorFab tasks over a :class:`HermesHost`.

Tasks are thin: validate input, call the host, wrap the answer in a NorFab
``Result``. Nothing from Hermes appears in a result; results are this
project's models (``norfab_hermes.models``).
"""

import importlib.metadata
import logging
import os
import platform
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, Optional

import yaml
from norfab.core.worker import Job, NFPWorker, Task
from norfab.models import Result

from .host import AgentUnavailable, Busy, HermesHost, UnknownRun, UnknownSession
from .models import (
    SUPPORTED_COMMANDS,
    AgentDefinition,
    AgentDetails,
    AgentInput,
    AgentReference,
    AgentSummary,
    CommandInput,
    CommandResult,
    GetAgentResult,
    GetAgentsResult,
    GetInventoryResult,
    GetSessionInput,
    GetSessionResult,
    GetSessionsInput,
    GetSessionsResult,
    GetStatusResult,
    GetVersionResult,
    InterruptInput,
    InterruptResult,
    InventoryError,
    InvokeInput,
    InvokeResult,
    WorkerStatus,
    parse_agent,
    parse_inventory,
)
from .redact import redact

SERVICE = "hermes"
CONTROL_JOB_SLOTS = 4  # NorFab job slots kept free for status, interrupt and get_* tasks
FETCH_ATTEMPTS = 10  # nf:// fetches at start-up race the filesharing worker's READY

log = logging.getLogger(__name__)

# errors a caller can fix; anything else is a bug and keeps its traceback
CALLER_ERRORS = (AgentUnavailable, UnknownSession, UnknownRun, Busy, InventoryError, ValueError)


def answer(task: Callable[[], Any]) -> Result:
    """Run a host call; caller errors become a failed Result with a clear message."""
    try:
        return Result(result=task())
    except CALLER_ERRORS as error:
        return Result(failed=True, errors=[str(error)], messages=[str(error)])


class HermesWorker(NFPWorker):
    """
    NorFab worker hosting the Hermes Agent gateway and serving named agents.

    Args:
        inventory: NorFab inventory object.
        broker: broker URL.
        worker_name: name of this worker.
        exit_event: set by NorFab when the worker must stop.
        init_done_event: set when the worker finished initialising.
        log_level: worker log level.
    """

    def __init__(
        self,
        inventory: Any,
        broker: str,
        worker_name: str,
        exit_event: Any = None,
        init_done_event: Any = None,
        log_level: Optional[str] = None,
    ) -> None:
        super().__init__(inventory, broker, SERVICE, worker_name, exit_event, log_level)
        self.init_done_event = init_done_event
        self.hermes_inventory: Dict[str, Any] = {}
        self.host: Optional[HermesHost] = None
        self.init_errors = []
        started = time.time()
        try:
            self.hermes_inventory = self.load_inventory() or {}
            self.host = self._make_host()
            self.host.start()
        except Exception as error:
            # never raise from __init__: NorFab would wait for this worker forever
            log.exception(f"{self.name} - Failed to start Hermes")
            self.init_errors.append(str(error))
        finally:
            runs = self.host.inventory.max_concurrent_runs if self.host else 1
            # queued runs hold job slots too; control tasks keep their own
            self.max_concurrent_jobs = 2 * runs + CONTROL_JOB_SLOTS
            threading.Thread(target=self._stop_on_exit, name="hermes-exit-watch", daemon=True).start()
            self.init_done_event.set()
        log.info(f"{self.name} - Started in {time.time() - started:.1f}s")

    def _make_host(self) -> HermesHost:
        inventory = parse_inventory(self.hermes_inventory)
        agents: Dict[str, AgentDefinition] = {}
        errors: Dict[str, str] = {}
        for name, data in inventory.agents.items():
            try:
                entry = parse_agent(name, data)
                agents[name] = self._load_reference(name, entry) if isinstance(entry, AgentReference) else entry
            except InventoryError as error:
                log.error(f"{self.name} - Agent '{name}' is unavailable: {error}")
                errors[name] = str(error)
        root = Path(inventory.hermes_home or os.path.join(self.base_dir, "hermes"))
        return HermesHost(self.name, root, inventory, agents, errors, client=self.client)

    def _load_reference(self, name: str, reference: AgentReference) -> AgentDefinition:
        url = reference.from_yaml_file
        for _ in range(FETCH_ATTEMPTS):
            text = self.fetch_file(url, raise_on_fail=False, read=True)
            if text is not None:
                break
            time.sleep(1)
        else:
            raise InventoryError(f"agent '{name}': could not fetch '{url}'; check the path under the NorFab base directory")
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as error:
            raise InventoryError(f"agent '{name}': '{url}' is not valid YAML: {error}") from None
        if isinstance(data, dict) and "from_yaml_file" in data:
            raise InventoryError(f"agent '{name}': '{url}' refers to another file; put the definition itself there")
        definition = parse_agent(name, data)
        return definition

    def _stop_on_exit(self) -> None:
        # NorFab waits for running jobs before it calls worker_exit(); a turn
        # in flight would hold shutdown, so stop the host as soon as exit starts
        self.exit_event.wait()
        self.worker_exit()

    def worker_exit(self) -> None:
        if self.host is not None:
            self.host.stop()

    def _host(self) -> HermesHost:
        if self.host is None:
            raise AgentUnavailable(f"worker '{self.name}' failed to start: {'; '.join(self.init_errors)}")
        return self.host

    # ------------------------------------------------------------------ tasks

    @Task(
        input=InvokeInput,
        output=InvokeResult,
        fastapi={"methods": ["POST"]},
        mcp=False,
        agent={"enabled": False},
    )
    def invoke(
        self,
        job: Job,
        agent: str,
        instructions: str,
        session_id: Optional[str] = None,
        timeout: Optional[float] = None,
        interactive: bool = False,
    ) -> Result:
        """
        Run one agent turn: send instructions to an agent and return its reply.

        Args:
            job: NorFab job, carries progress events to the caller.
            agent: agent name.
            instructions: what to ask the agent.
            session_id: continue this session; omit to start a new one.
            timeout: run budget in seconds, at most the agent's run_timeout.
            interactive: the caller answers the agent's questions and approval
                requests (NorFab input requests); otherwise they are refused.

        Returns:
            Result whose ``result`` is the run envelope: response, run_id,
            session_id, agent, worker, stop_reason, tool_calls, usage, warnings.
        """
        return answer(
            lambda: self._host().invoke(agent, instructions, session_id, timeout, job, interactive).model_dump()
        )

    @Task(input=InterruptInput, output=InterruptResult, fastapi={"methods": ["POST"]}, mcp=False, agent={"enabled": False})
    def interrupt(self, agent: str, run_id: str) -> Result:
        """
        Stop a running invoke; it returns with stop_reason 'interrupted' and its partial reply.

        Args:
            agent: agent name of the run.
            run_id: run id from the invoke's first job event or get_status.
        """
        return answer(lambda: self._host().interrupt(agent, run_id).model_dump())

    @Task(
        input=GetSessionsInput,
        output=GetSessionsResult,
        fastapi={"methods": ["GET"]},
        mcp={"annotations": {"readOnlyHint": True}},
    )
    def get_sessions(self, agent: str, limit: int = 20) -> Result:
        """
        List an agent's sessions, newest activity first.

        Args:
            agent: agent name.
            limit: how many sessions to list.
        """
        return answer(lambda: [s.model_dump() for s in self._host().get_sessions(agent, limit)])

    @Task(
        input=GetSessionInput,
        output=GetSessionResult,
        fastapi={"methods": ["GET"]},
        mcp={"annotations": {"readOnlyHint": True}},
    )
    def get_session(self, agent: str, session_id: str, limit: int = 50) -> Result:
        """
        Show one session of an agent with its newest messages.

        Args:
            agent: agent name.
            session_id: Hermes session id.
            limit: how many of the newest messages to return.
        """
        return answer(lambda: self._host().get_session(agent, session_id, limit).model_dump())

    @Task(input=CommandInput, output=CommandResult, fastapi={"methods": ["POST"]}, mcp=False, agent={"enabled": False})
    def command(self, agent: str, command: str, session_id: Optional[str] = None) -> Result:
        """
        Run a native Hermes slash command (e.g. /usage) through the agent's gateway, never a shell.

        Args:
            agent: agent name.
            command: slash command with arguments; see get_status for the supported ones.
            session_id: session whose chat runs the command; omit for a fresh chat.
        """
        return answer(lambda: self._host().command(agent, command, session_id).model_dump())

    @Task(output=GetAgentsResult, fastapi={"methods": ["GET"]}, mcp={"annotations": {"readOnlyHint": True}})
    def get_agents(self) -> Result:
        """List the agents served by this worker with their model and availability."""
        return answer(lambda: [summary.model_dump() for summary in self._agent_summaries().values()])

    @Task(
        input=AgentInput,
        output=GetAgentResult,
        fastapi={"methods": ["GET"]},
        mcp={"annotations": {"readOnlyHint": True}},
    )
    def get_agent(self, agent: str) -> Result:
        """
        Show one agent: effective instructions, tools and Hermes config, secrets redacted.

        Args:
            agent: agent name.
        """
        return answer(lambda: self._agent_details(agent).model_dump())

    @Task(output=GetStatusResult, fastapi={"methods": ["GET"]}, mcp={"annotations": {"readOnlyHint": True}})
    def get_status(self) -> Result:
        """Readiness, agents, active runs and errors of this worker."""
        host = self.host
        errors = list(self.init_errors) + (host.warnings + list(host.errors.values()) + host.tool_errors() if host else [])
        return Result(
            result=WorkerStatus(
                ready=host is not None and not errors and not host.stopping.is_set(),
                errors=errors,
                agents=host.availability() if host else {},
                active_runs=host.active_runs() if host else [],
                max_concurrent_runs=host.inventory.max_concurrent_runs if host else 0,
                hermes_home=str(host.root) if host else None,
                commands=sorted(SUPPORTED_COMMANDS),
                pid=os.getpid(),
                threads=threading.active_count(),
                open_files=len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else 0,
            ).model_dump()
        )

    @Task(output=GetInventoryResult, fastapi={"methods": ["GET"]}, mcp={"annotations": {"readOnlyHint": True}})
    def get_inventory(self) -> Result:
        """This worker's inventory with secrets redacted."""
        return Result(result=redact(self.hermes_inventory))

    @Task(output=GetVersionResult, fastapi={"methods": ["GET"]}, mcp={"annotations": {"readOnlyHint": True}})
    def get_version(self) -> Result:
        """Versions of norfab-hermes, NorFab, Hermes Agent, PICLE and Python."""
        versions = {
            package: importlib.metadata.version(package)
            for package in ("norfab-hermes", "norfab", "hermes-agent", "picle", "pydantic")
        }
        versions.update(python=sys.version.split()[0], platform=platform.platform())
        return Result(result=versions)

    @Task(fastapi=False, mcp=False, agent={"enabled": False})
    def run_shell_cmd(self, job: Job, command: Optional[str] = None, timeout: Optional[int] = None) -> Result:
        """Refused: a hermes worker never runs shell commands for callers."""
        message = "run_shell_cmd is disabled on hermes workers: no shell access to the worker host"
        return Result(failed=True, errors=[message], messages=[message], status="skipped")

    # ---------------------------------------------------------------- helpers

    def _agent_summaries(self) -> Dict[str, AgentSummary]:
        host = self.host
        if host is None:
            return {}
        return {
            name: _agent_summary(host, name, available, host.effective_config(name) if name in host.agents else {})
            for name, available in host.availability().items()
        }

    def _agent_details(self, agent: str) -> AgentDetails:
        host = self._host()
        definition = host.require(agent)
        config = host.effective_config(agent)
        summary = _agent_summary(host, agent, host.availability()[agent], config)
        return AgentDetails(
            **summary.model_dump(),
            instructions=definition.instructions,
            toolsets=definition.toolsets,
            tools={name: spec.summary() for name, spec in host.tool_specs.get(agent, {}).items()},
            run_timeout=definition.run_timeout,
            max_turns=host.max_turns(definition),
            config=redact(config),
            commands=sorted(SUPPORTED_COMMANDS),
        )


def _agent_summary(host: HermesHost, name: str, available: bool, config: Dict[str, Any]) -> AgentSummary:
    definition = host.agents.get(name)
    model = config.get("model") or {}
    return AgentSummary(
        name=name,
        description=(definition.description if definition else None) or name,
        model=model.get("default"),
        provider=model.get("provider"),
        available=available,
        error=host.errors.get(name),
    )
