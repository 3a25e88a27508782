"""The memory task: what an agent saved in Hermes' memory and skills, listed and cleared by its operator."""

from typing import Optional

from norfab.core.worker import Job
from norfab.models import Result

from ...models import MemoryInput, MemoryResult
from ...norfab_compat import client_of
from .base import REST, HermesTask
from .mixin import TaskMixin


class MemoryTasks(TaskMixin):
    @HermesTask(input=MemoryInput, output=MemoryResult, fastapi=REST, mcp=False, agent={"enabled": False})
    def memory(
        self, job: Job, agent: str, action: str = "list", target: Optional[str] = None, entry: Optional[str] = None
    ) -> Result:
        """
        List or clear what an agent saved: its memory notes, what it knows of the operator, its skills.

        Args:
            job: NorFab job; its client is recorded in the audit log when it clears.
            agent: agent name.
            action: list, or clear.
            target: clear: memory, user or skills.
            entry: clear: a unique part of the one entry to forget, or a skill name; omit for all.

        Returns:
            Result whose ``result`` holds the memory and user entries (secrets
            masked), the skills, whether the definition turns memory and
            skills on, and what a clear did.
        """
        result = self.running_host().agent_memory(agent, action, target, entry, client_of(job))
        return Result(result=result.model_dump())
