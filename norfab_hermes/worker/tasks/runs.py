"""Tasks that run agents: invoke, start_run in the background, get_run, interrupt, and native commands."""

from typing import Any, Dict, Optional

from norfab.core.worker import Job
from norfab.models import Result

from ...models import (
    CommandInput,
    CommandResult,
    GetRunInput,
    GetRunResult,
    InterruptInput,
    InterruptResult,
    InvokeInput,
    InvokeResult,
    Lineage,
    StartRunInput,
)
from ...norfab_compat import client_of
from ..runs.request import RunRequest
from .base import READ_ONLY, REST, STARTS_RUN, STOPS_RUN, HermesTask
from .mixin import TaskMixin


class RunTasks(TaskMixin):
    @HermesTask(
        input=InvokeInput,
        output=InvokeResult,
        fastapi=REST,
        mcp=False,
        agent={"enabled": False},
    )
    def invoke(
        self,
        job: Job,
        agent: str,
        instructions: str,
        session_id: Optional[str] = None,
        run_timeout: Optional[float] = None,
        interactive: bool = False,
        lineage: Optional[Dict[str, Any]] = None,
        dedupe_key: Optional[str] = None,
        response_schema: Optional[Dict[str, Any]] = None,
        case_id: Optional[str] = None,
        timeout: Optional[float] = None,
    ) -> Result:
        """
        Run one agent turn: send instructions to an agent and return its reply.

        Args:
            job: NorFab job, carries progress events to the caller.
            agent: agent name.
            instructions: what to ask the agent.
            session_id: continue this session; omit to start a new one.
            run_timeout: run budget in seconds, at most the agent's run_timeout.
            interactive: the caller answers the agent's questions and approval
                requests (NorFab input requests); otherwise they are refused.
            lineage: set by a delegating agent's worker: the runs that asked.
            dedupe_key: within the agent's dedupe_window, a request with the key
                of an earlier run gets that run's envelope, marked deduplicated.
            response_schema: JSON schema the answer must match (one corrective
                turn when it does not).
            case_id: the case (incident) the run belongs to; every record of
                the run carries it, and a delegated run passes it on.
            timeout: the old name of run_timeout, still accepted.

        Returns:
            Result whose ``result`` is the run envelope: response, run_id,
            session_id, agent, worker, stop_reason, tool_calls, usage, warnings,
            artifacts, structured_response (or structured_error), and for a
            delegated run its lineage.
        """
        request = RunRequest(
            agent,
            instructions,
            session_id=session_id,
            run_timeout=run_timeout or timeout,
            interactive=interactive,
            client=client_of(job),
            dedupe_key=dedupe_key,
            response_schema=response_schema,
            case_id=case_id,
            lineage=Lineage.model_validate(lineage) if lineage else None,
        )
        return Result(result=self.running_host().pipeline.invoke(request, job).model_dump())

    @HermesTask(input=InterruptInput, output=InterruptResult, fastapi=REST, mcp=STOPS_RUN, agent={"enabled": False})
    def interrupt(self, agent: str, run_id: str) -> Result:
        """
        Stop an agent's run: it ends with stop_reason 'interrupted' and whatever reply it had so far.

        Args:
            agent: agent name of the run.
            run_id: run id from the invoke's first job event or get_status.
        """
        return Result(result=self.running_host().interrupt(agent, run_id).model_dump())

    @HermesTask(input=CommandInput, output=CommandResult, fastapi=REST, mcp=False, agent={"enabled": False})
    def command(self, agent: str, command: str, session_id: Optional[str] = None) -> Result:
        """
        Run a native Hermes slash command (e.g. /usage) through the agent's gateway, never a shell.

        Args:
            agent: agent name.
            command: slash command with arguments; see get_status for the supported ones.
            session_id: session whose chat runs the command; omit for a fresh chat.
        """
        return Result(result=self.running_host().command(agent, command, session_id).model_dump())

    @HermesTask(input=StartRunInput, output=GetRunResult, fastapi=REST, mcp=STARTS_RUN, agent={"enabled": False})
    def start_run(
        self,
        job: Job,
        agent: str,
        instructions: str,
        session_id: Optional[str] = None,
        run_timeout: Optional[float] = None,
        dedupe_key: Optional[str] = None,
        response_schema: Optional[Dict[str, Any]] = None,
        case_id: Optional[str] = None,
    ) -> Result:
        """
        Ask a network agent to investigate something; it works in the background and this answers at
        once with run_id and session_id. Poll get_run with them until state is 'finished'. The agent
        reads devices through its own tools; changes wait for an operator's approval.

        Args:
            agent: agent name.
            instructions: what to ask the agent.
            session_id: continue this session; omit to start a new one.
            run_timeout: run budget in seconds, at most the agent's run_timeout.
            dedupe_key: within the agent's dedupe_window, a request with the key of an
                earlier run gets that run (deduplicated: true) instead of a new one.
            response_schema: JSON schema the answer must match.
            case_id: the case (incident) the run belongs to; every record of the run carries it.

        Returns:
            Result whose ``result`` is the run's state (follow it with get_run).
        """
        request = RunRequest(
            agent,
            instructions,
            session_id=session_id,
            run_timeout=run_timeout,
            client=client_of(job),
            dedupe_key=dedupe_key,
            response_schema=response_schema,
            case_id=case_id,
        )
        return Result(result=self.running_host().pipeline.start_run(request).model_dump())

    @HermesTask(input=GetRunInput, output=GetRunResult, fastapi=REST, mcp=READ_ONLY, agent={"enabled": False})
    def get_run(self, agent: str, run_id: str, offset: int = 0) -> Result:
        """
        Check on an agent's run: its state (queued, running, waiting_for_approval, finished), progress
        events from an offset, and once finished its answer, tool calls and usage. Finished runs are
        answered from the worker's run records, also after a restart.

        Args:
            agent: agent name of the run.
            run_id: run id, from start_run or invoke.
            offset: first event to return; next_offset of the previous answer.
        """
        return Result(result=self.running_host().run_state(agent, run_id, offset).model_dump())
