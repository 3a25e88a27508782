"""Tasks that read an agent's sessions."""

from norfab.models import Result

from ...models import GetSessionInput, GetSessionResult, GetSessionsInput, GetSessionsResult
from .base import READ_ONLY, REST, HermesTask
from .mixin import TaskMixin


class SessionTasks(TaskMixin):
    @HermesTask(
        input=GetSessionsInput,
        output=GetSessionsResult,
        fastapi=REST,
        mcp=READ_ONLY,
    )
    def get_sessions(self, agent: str, limit: int = 20) -> Result:
        """
        List an agent's sessions, newest activity first.

        Args:
            agent: agent name.
            limit: how many sessions to list.
        """
        return Result(result=[s.model_dump() for s in self.running_host().get_sessions(agent, limit)])

    @HermesTask(
        input=GetSessionInput,
        output=GetSessionResult,
        fastapi=REST,
        mcp=READ_ONLY,
    )
    def get_session(self, agent: str, session_id: str, limit: int = 50) -> Result:
        """
        Show one session of an agent with its newest messages.

        Args:
            agent: agent name.
            session_id: Hermes session id.
            limit: how many of the newest messages to return.
        """
        return Result(result=self.running_host().get_session(agent, session_id, limit).model_dump())
