"""Tasks that run agents: invoke, interrupt, and native commands."""

from typing import Optional

from norfab.core.worker import Job
from norfab.models import Result

from ..models import CommandInput, CommandResult, InterruptInput, InterruptResult, InvokeInput, InvokeResult
from .task import HermesTask


class RunTasks:
    @HermesTask(
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
        return Result(result=self.running_host().invoke(agent, instructions, session_id, timeout, job, interactive).model_dump())

    @HermesTask(input=InterruptInput, output=InterruptResult, fastapi={"methods": ["POST"]}, mcp=False, agent={"enabled": False})
    def interrupt(self, agent: str, run_id: str) -> Result:
        """
        Stop a running invoke; it returns with stop_reason 'interrupted' and its partial reply.

        Args:
            agent: agent name of the run.
            run_id: run id from the invoke's first job event or get_status.
        """
        return Result(result=self.running_host().interrupt(agent, run_id).model_dump())

    @HermesTask(input=CommandInput, output=CommandResult, fastapi={"methods": ["POST"]}, mcp=False, agent={"enabled": False})
    def command(self, agent: str, command: str, session_id: Optional[str] = None) -> Result:
        """
        Run a native Hermes slash command (e.g. /usage) through the agent's gateway, never a shell.

        Args:
            agent: agent name.
            command: slash command with arguments; see get_status for the supported ones.
            session_id: session whose chat runs the command; omit for a fresh chat.
        """
        return Result(result=self.running_host().command(agent, command, session_id).model_dump())
