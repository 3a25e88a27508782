"""Tasks that show the evidence kept of every tool result: a run's artifacts, one artifact whole, an incident note."""

from typing import Optional

from norfab.models import Result

from ...models import EvidenceInput, EvidenceResult, ReportInput, ReportResult
from .base import READ_ONLY, REST, HermesTask
from .mixin import TaskMixin


class EvidenceTasks(TaskMixin):
    @HermesTask(input=EvidenceInput, output=EvidenceResult, fastapi=REST, mcp=READ_ONLY)
    def evidence(
        self,
        agent: str,
        run_id: Optional[str] = None,
        session_id: Optional[str] = None,
        artifact_id: Optional[str] = None,
    ) -> Result:
        """
        The evidence an agent's run received: every tool result kept as an artifact with its digest.

        Args:
            agent: agent name.
            run_id: the run whose artifacts to list.
            session_id: or the session whose artifacts to list.
            artifact_id: one artifact, read back whole (even when the model saw it cut).
        """
        return Result(result=self.running_host().evidence_of(agent, run_id, session_id, artifact_id).model_dump())

    @HermesTask(input=ReportInput, output=ReportResult, fastapi=REST, mcp=READ_ONLY)
    def report(self, agent: str, session_id: str) -> Result:
        """
        An incident note in Markdown from one session: every line the agent quoted linked to its artifact and digest.

        Args:
            agent: agent name.
            session_id: the session to write the note from.
        """
        return Result(result=self.running_host().report(agent, session_id).model_dump())
