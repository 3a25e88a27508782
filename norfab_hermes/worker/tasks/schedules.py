"""The schedule task: an agent's scheduled checks (native Hermes cron) and their history."""

from typing import Any, Dict, Optional

from norfab.core.worker import Job
from norfab.models import Result

from ...models import ScheduleDefinition, ScheduleInput, ScheduleResult
from ...norfab_compat import client_of
from .base import REST, HermesTask
from .mixin import TaskMixin


class ScheduleTasks(TaskMixin):
    @HermesTask(input=ScheduleInput, output=ScheduleResult, fastapi=REST, mcp=False, agent={"enabled": False})
    def schedule(
        self,
        job: Job,
        agent: str,
        action: str,
        schedule_id: Optional[str] = None,
        definition: Optional[Dict[str, Any]] = None,
        limit: int = 20,
    ) -> Result:
        """
        Create, list, change, run and read the history of an agent's scheduled checks.

        Args:
            agent: agent name.
            action: create, list, update, pause, resume, remove, run or history.
            schedule_id: schedule id or name (every action but create and list).
            definition: create: name, prompt and schedule ('every 5m', a cron
                expression or an ISO time), optional repeat and skills;
                update: the fields to change.
            limit: history: how many of the newest runs to return.

        Returns:
            Result whose ``result`` holds the action, the schedules it shows or
            changed, the history (newest first) and a one-line message.
        """
        parsed = ScheduleDefinition.model_validate(definition) if definition is not None else None
        result = self.running_host().schedule(agent, action, schedule_id, parsed, limit, client_of(job))
        return Result(result=result.model_dump())
