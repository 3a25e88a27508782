"""The change envelope's tasks: reset an agent's circuit breaker, acknowledge a change of unknown outcome."""

from typing import Optional

from norfab.core.worker import Job
from norfab.models import Result

from ...models import AcknowledgeInput, BreakerResult, ChangeOutcomeResult, ResetBreakerInput
from ...norfab_compat import client_of
from .base import REST, HermesTask
from .mixin import TaskMixin


class ChangeTasks(TaskMixin):
    @HermesTask(input=ResetBreakerInput, output=BreakerResult, fastapi=REST, mcp=False, agent={"enabled": False})
    def reset_breaker(self, job: Job, agent: str, note: Optional[str] = None) -> Result:
        """
        Let an agent change devices again after its circuit breaker stopped it (its changes failed
        their verification changes.breaker_after times in a row). Reset it once the cause is known.

        Args:
            agent: agent name.
            note: what was found and fixed, kept with the breaker.
        """
        return Result(result=self.running_host().reset_breaker(agent, client_of(job), note).model_dump())

    @HermesTask(input=AcknowledgeInput, output=ChangeOutcomeResult, fastapi=REST, mcp=False, agent={"enabled": False})
    def acknowledge_outcome(self, job: Job, outcome_id: str, note: Optional[str] = None) -> Result:
        """
        Acknowledge a change whose outcome nobody knows (its worker stopped, or its tool stopped waiting,
        while the change job was in flight), after checking its devices. Until then its devices take no
        other change, and get_run, get_session and get_status show it.

        Args:
            outcome_id: the change's outcome id (its job UUID), from get_status or get_run.
            note: what the devices showed, kept with the record.
        """
        return Result(result=self.running_host().acknowledge(outcome_id, client_of(job), note).model_dump())
