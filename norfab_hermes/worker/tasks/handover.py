"""The handover task: this worker's share of a shift handover (the client asks every worker, then the writer)."""

from typing import List, Optional

from norfab.models import Result

from ...models import HandoverInput, HandoverResult
from .base import READ_ONLY, REST, HermesTask
from .mixin import TaskMixin


class HandoverTasks(TaskMixin):
    @HermesTask(input=HandoverInput, output=HandoverResult, fastapi=REST, mcp=READ_ONLY)
    def handover(
        self,
        agents: Optional[List[str]] = None,
        since: Optional[str] = None,
        limit: int = 20,
        case_id: Optional[str] = None,
    ) -> Result:
        """
        The material of a shift handover from this worker: sessions active since a time and scheduled findings,
        or the sessions of one case's runs.

        Args:
            agents: agents whose work is handed over; omit for all of this worker's.
            since: an ISO time, or a duration back from now such as 12h (default 12h; for a case,
                from its first run).
            limit: newest sessions per agent.
            case_id: only the sessions with runs of this case (no scheduled findings: they belong to no case).

        Returns:
            Result whose ``result`` lists the sessions (request, last answer,
            runs, jobs, devices, changes with who approved them) and each
            schedule's newest finding (status, run, session, jobs, criteria).
        """
        return Result(result=self.running_host().handover_material(agents, since, limit, case_id).model_dump())
