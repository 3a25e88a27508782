"""Tasks that read the worker's records: past runs, and the audit log with the check of its hash chain."""

from typing import Optional

from norfab.models import Result

from ...models import GetAuditInput, GetAuditResult, GetRunsInput, GetRunsResult, TaskInput, VerifyAuditResult
from .base import READ_ONLY, REST, HermesTask
from .mixin import TaskMixin


class RecordTasks(TaskMixin):
    @HermesTask(input=GetRunsInput, output=GetRunsResult, fastapi=REST, mcp=READ_ONLY, agent={"enabled": False})
    def get_runs(
        self,
        agent: Optional[str] = None,
        state: Optional[str] = None,
        stop_reason: Optional[str] = None,
        since: Optional[str] = None,
        until: Optional[str] = None,
        schedule_id: Optional[str] = None,
        decided_by: Optional[str] = None,
        text: Optional[str] = None,
        case_id: Optional[str] = None,
        model: Optional[str] = None,
        provider: Optional[str] = None,
        definition_digest: Optional[str] = None,
        hermes_version: Optional[str] = None,
        norfab_hermes_version: Optional[str] = None,
        limit: int = 50,
        offset: int = 0,
    ) -> Result:
        """
        List the runs this worker recorded, newest first, also from before a restart: who asked what,
        when, how it ended, its tool calls, approvals and usage, its case, and what answered it (model,
        provider, versions, definition digest). Read one whole with get_run.

        Args:
            agent: only this agent's runs.
            state: only runs in this state (queued, running, waiting_for_approval, finished).
            stop_reason: only runs that ended so, e.g. token_budget.
            since: from this ISO time, or an age before now (30m, 12h, 7d).
            until: up to this ISO time, or an age before now.
            schedule_id: only the runs of this schedule.
            decided_by: only runs with an approval this NorFab client decided.
            text: only runs whose instructions or response hold this text.
            case_id: only the runs of this case.
            model: only runs answered by this model id.
            provider: only runs answered through this provider.
            definition_digest: only runs of this agent definition (its digest on a run record).
            hermes_version: only runs on this Hermes Agent version.
            norfab_hermes_version: only runs on this norfab-hermes version.
            limit: runs per page.
            offset: runs to skip; next_offset of the previous page.
        """
        # NorFab's Task validated the input already; this normalizes since/until (ages become ISO times)
        query = GetRunsInput(
            agent=agent,
            state=state,
            stop_reason=stop_reason,
            since=since,
            until=until,
            schedule_id=schedule_id,
            decided_by=decided_by,
            text=text,
            case_id=case_id,
            model=model,
            provider=provider,
            definition_digest=definition_digest,
            hermes_version=hermes_version,
            norfab_hermes_version=norfab_hermes_version,
            limit=limit,
            offset=offset,
        )
        return Result(result=self.running_host().runs_page(query).model_dump())

    @HermesTask(input=GetAuditInput, output=GetAuditResult, fastapi=REST, mcp=READ_ONLY, agent={"enabled": False})
    def get_audit(
        self,
        after: int = 0,
        limit: int = 1000,
        agent: Optional[str] = None,
        run_id: Optional[str] = None,
        kind: Optional[str] = None,
        since: Optional[str] = None,
        until: Optional[str] = None,
        before: Optional[int] = None,
        newest_first: bool = False,
    ) -> Result:
        """
        Read this worker's audit log, oldest first (or newest first): runs started and ended, tool calls, approvals and
        decisions, agent and schedule changes, each entry chained to the one before by its hash.

        Args:
            after: entries after this sequence number; next_after of the previous page.
            limit: entries per page.
            agent: only this agent's entries.
            run_id: only this run's entries.
            kind: only entries of this kind, e.g. approval.decided.
            since: from this ISO time, or an age before now (30m, 12h, 7d).
            until: up to this ISO time, or an age before now.
            before: entries before this sequence number; next_before of the previous newest-first page.
            newest_first: the newest entries first, e.g. a kind's last decisions without reading them all.
        """
        query = GetAuditInput(
            after=after,
            limit=limit,
            agent=agent,
            run_id=run_id,
            kind=kind,
            since=since,
            until=until,
            before=before,
            newest_first=newest_first,
        )
        page = self.running_host().records.audit_page(**query.model_dump())
        return Result(result=page.model_dump())

    @HermesTask(input=TaskInput, output=VerifyAuditResult, fastapi=REST, mcp=READ_ONLY, agent={"enabled": False})
    def verify_audit(self) -> Result:
        """
        Check this worker's audit log: every entry intact (its hash matches it) and in its place
        (linked to the one before, no gaps, the head where it was), and every operator's signature an
        entry keeps checked again against the operators' keys. Lists what was edited or deleted.
        """
        keys = self.identity.public_keys() if self.identity.enabled else None
        return Result(result=self.running_host().records.verify(keys).model_dump())
