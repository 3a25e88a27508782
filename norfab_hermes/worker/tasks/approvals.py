"""The approval inbox tasks: pending approvals, approve and deny."""

from typing import Optional

from norfab.core.worker import Job
from norfab.models import Result

from ...models import ApprovalResult, DecisionInput, GetApprovalsInput, GetApprovalsResult
from ...norfab_compat import client_of
from .base import APPROVES, DENIES, READ_ONLY, REST, HermesTask, signed_subject
from .mixin import TaskMixin


class ApprovalTasks(TaskMixin):
    @HermesTask(
        input=GetApprovalsInput, output=GetApprovalsResult, fastapi=REST, mcp=READ_ONLY, agent={"enabled": False}
    )
    def get_approvals(self, agent: Optional[str] = None) -> Result:
        """
        List the network changes agents are waiting to have approved: the tool, its exact arguments,
        where it goes and when the request expires, oldest first.

        Args:
            agent: only this agent's approvals.
        """
        return Result(result=[a.model_dump() for a in self.running_host().pending_approvals(agent)])

    @HermesTask(input=DecisionInput, output=ApprovalResult, fastapi=REST, mcp=APPROVES, agent={"enabled": False})
    def approve(self, job: Job, approval_id: str, note: Optional[str] = None) -> Result:
        """
        Approve a waiting tool call, which may change a network device: the agent's run makes the
        call and goes on. Only approve what get_approvals shows and a human operator agreed to.

        Args:
            approval_id: approval id, from get_approvals or get_run.
            note: why, kept in the run's record.
        """
        return Result(
            result=self.running_host().decide(approval_id, True, client_of(job), note, signed_subject()).model_dump()
        )

    @HermesTask(input=DecisionInput, output=ApprovalResult, fastapi=REST, mcp=DENIES, agent={"enabled": False})
    def deny(self, job: Job, approval_id: str, note: Optional[str] = None) -> Result:
        """
        Deny a waiting tool call: it is not made, and the agent's run goes on knowing it was denied.

        Args:
            approval_id: approval id, from get_approvals or get_run.
            note: why, kept in the run's record and told to the agent.
        """
        return Result(
            result=self.running_host().decide(approval_id, False, client_of(job), note, signed_subject()).model_dump()
        )
