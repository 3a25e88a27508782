"""
What the NorFab tasks ask of the host: runs, sessions, approvals, the change
envelope's operator side, schedules, agents, records, memory, evidence and
handover. Each request checks the agent against the catalog, asks the room
that owns the answer and, for what changes something, writes the audit
entry. ``HermesHost`` wires the rooms this mixin reaches through ``self``.
"""

import logging
import threading
from typing import Any, Dict, List, Optional

from ..errors import AgentUnavailable, NotAllowed
from ..models import (
    AgentBudget,
    AgentDefinition,
    ApprovalInfo,
    BreakerState,
    ChangePolicy,
    ChangesStatus,
    CommandResultData,
    EvidenceResultData,
    GetRunsInput,
    HandoverMaterial,
    InterruptResultData,
    ManageAgentResultData,
    MemoryResultData,
    OutcomeUnknown,
    ReportResultData,
    RunsPage,
    RunStateData,
    ScheduleDefinition,
    ScheduleResultData,
    SessionDetails,
    SessionSummary,
)
from ..safety.approvers import approver_refusal
from .agents.catalog import AgentCatalog
from .agents.lifecycle import Lifecycle
from .approvals.inbox import ApprovalInbox
from .changes.control import ChangeControl
from .evidence import report
from .evidence.store import EvidenceStore
from .handover.material import Handover
from .hermes.runtime import HermesRuntime
from .memory.store import AgentMemory
from .records.store import Records
from .runs.budget import DailyUsage
from .runs.pipeline import RunPipeline
from .runs.registry import RunRegistry
from .schedules.ticker import Schedules
from .sessions import commands
from .sessions.store import Sessions

log = logging.getLogger(__name__)


class HostOperations:
    """The requests of the NorFab tasks, on the rooms ``HermesHost`` wires (catalog, runs, pipeline, ...)."""

    # the rooms HermesHost wires, as this mixin reaches them (declared, never set here)
    worker_name: str
    stopping: threading.Event
    catalog: AgentCatalog
    runtime: HermesRuntime
    records: Records
    runs: RunRegistry
    daily: DailyUsage
    sessions: Sessions
    lifecycle: Lifecycle
    approvals: ApprovalInbox
    pipeline: RunPipeline
    evidence: EvidenceStore
    schedules: Schedules
    memory: AgentMemory
    handover: Handover
    changes: ChangeControl

    def require(self, agent: str) -> AgentDefinition:
        raise NotImplementedError  # HermesHost's

    # ----------------------------------------------------------------- runs

    def run_state(self, agent: str, run_id: str, offset: int = 0) -> RunStateData:
        """A run, in flight or from its record, with its changes of unknown outcome until acknowledged."""
        state = self.pipeline.run_state(agent, run_id, offset)
        unknown = self.changes.outcomes.pending(agent, run_id=run_id)
        return state.model_copy(update={"outcome_unknown": unknown}) if unknown else state

    def decide(
        self, approval_id: str, approve: bool, by: Optional[str], note: Optional[str], subject: Optional[str] = None
    ) -> ApprovalInfo:
        return self.approvals.decide(approval_id, approve, by, note, subject)

    def pending_approvals(self, agent: Optional[str]) -> List[ApprovalInfo]:
        if agent is not None:
            self.catalog.require_known(agent)
        return self.approvals.pending(agent)

    def interrupt(self, agent: str, run_id: str) -> InterruptResultData:
        self.catalog.require(agent)
        return self.runs.interrupt(agent, run_id)

    # ------------------------------------------------------------- sessions

    def get_sessions(self, agent: str, limit: int) -> List[SessionSummary]:
        self.require(agent)
        return self.sessions.list(agent, limit)

    def get_session(self, agent: str, session_id: str, limit: int) -> SessionDetails:
        self.require(agent)
        details = self.sessions.get(agent, session_id, limit)
        unknown = self.changes.outcomes.pending(agent, session_id=session_id)
        return details.model_copy(update={"outcome_unknown": unknown}) if unknown else details

    # -------------------------------------------------------------- changes

    def change_policy(self, agent: str) -> ChangePolicy:
        definition = self.catalog.agents.get(agent)
        return definition.changes if definition else ChangePolicy()

    def change_status(self, agent: Optional[str] = None) -> ChangesStatus:
        return self.changes.status({name: self.change_policy(name) for name in self.catalog.agents}, agent)

    def require_approver(self, agent: str, by: Optional[str], what: str) -> None:
        """An agent with approvers lets only them undo its change safety (a breaker, an unknown outcome).

        With operators, ``by`` (the verified operator) must also hold role approver for ``agent``: the
        agent the breaker or the outcome belongs to, whatever the request named.
        """
        definition = self.catalog.agents.get(agent)
        refusal = approver_refusal(definition.approvers if definition else [], by, f"{what} of agent '{agent}'", agent)
        identity = self.approvals.identity
        if refusal is None and identity is not None:
            refusal = identity.refusal(by, "approver", agent, f"{what} of agent '{agent}'")
        if refusal:
            self.records.note("approval.refused", agent=agent, actor=by, what=what)
            raise NotAllowed(refusal)

    def reset_breaker(self, agent: str, by: Optional[str], note: Optional[str]) -> BreakerState:
        self.catalog.require_known(agent)
        self.require_approver(agent, by, "reset the change breaker")
        breaker = self.changes.reset_breaker(agent, self.change_policy(agent), by, note)
        self.records.note("change.breaker_reset", agent=agent, actor=by, note=note)
        return breaker

    def acknowledge(self, outcome_id: str, by: Optional[str], note: Optional[str]) -> OutcomeUnknown:
        for pending in self.changes.outcomes.pending():
            if pending.outcome_id == outcome_id:
                self.require_approver(pending.agent, by, f"acknowledge the change of unknown outcome '{outcome_id}'")
        change = self.changes.acknowledge(outcome_id, by, note)
        log.warning(f"{self.worker_name} - Change job {change.job_uuid} acknowledged by {by}: {note or 'no note'}")
        details = {"outcome_id": outcome_id, "job_uuid": change.job_uuid, "devices": change.devices, "note": note}
        self.records.note("change.acknowledged", agent=change.agent, run_id=change.run_id, actor=by, **details)
        return change

    def schedule(
        self,
        agent: str,
        action: str,
        schedule_id: Optional[str],
        definition: Optional[ScheduleDefinition],
        limit: int,
        client: Optional[str] = None,
    ) -> ScheduleResultData:
        if action == "run" or agent not in self.catalog.stopped:
            self.require(agent)
        result = self.schedules.act(agent, action, schedule_id, definition, limit)
        if action not in ("list", "history"):
            changed = [{"schedule_id": s.schedule_id, "name": s.name, "schedule": s.schedule} for s in result.schedules]
            self.records.note(
                f"schedule.{action}", agent=agent, actor=client, schedules=changed or [{"schedule_id": schedule_id}]
            )
        return result

    def manage_agent(
        self,
        action: str,
        agent: str,
        definition: Optional[Dict[str, Any]],
        clone_from: Optional[str],
        interrupt: bool,
        client: Optional[str] = None,
    ) -> ManageAgentResultData:
        if self.stopping.is_set():
            raise AgentUnavailable(f"worker '{self.worker_name}' is shutting down")
        result = self.lifecycle.act(action, agent, definition, clone_from, interrupt)
        self.records.note(f"agent.{action}", agent=agent, actor=client, done=result.done, clone_from=clone_from)
        return result

    # -------------------------------------------------------------- records

    def budgets(self, agent: Optional[str] = None) -> Dict[str, AgentBudget]:
        return self.daily.budgets(self.catalog.agents, agent)

    def runs_page(self, query: GetRunsInput) -> RunsPage:
        return self.runs.page(query)

    # ------------------------------------------------------ carried over

    def agent_memory(
        self, agent: str, action: str, target: Optional[str], entry: Optional[str], client: Optional[str] = None
    ) -> MemoryResultData:
        self.catalog.require_known(agent)
        if agent not in self.catalog.agents:
            raise AgentUnavailable(
                f"agent '{agent}' on worker '{self.worker_name}' is invalid: {self.catalog.errors.get(agent)}"
            )
        result = self.memory.act(agent, self.catalog.agents[agent], action, target, entry)
        if action == "clear":
            self.records.note(
                "memory.clear", agent=agent, actor=client, target=target, entry=entry, done=result.message
            )
        return result

    def evidence_of(
        self, agent: str, run_id: Optional[str], session_id: Optional[str], artifact_id: Optional[str]
    ) -> EvidenceResultData:
        self.catalog.require_known(agent)
        return self.evidence.view(agent, self.worker_name, run_id, session_id, artifact_id)

    def report(self, agent: str, session_id: str) -> ReportResultData:
        self.catalog.require_known(agent)
        session = self.sessions.get(agent, session_id, 10_000)
        artifacts = self.evidence.artifacts(agent, session_id=session_id)
        markdown, quotes, linked = report.incident_note(session, artifacts, self.evidence.texts(agent, artifacts))
        return ReportResultData(
            agent=agent,
            worker=self.worker_name,
            session_id=session_id,
            markdown=markdown,
            artifacts=artifacts,
            quotes=quotes,
            linked=linked,
        )

    def handover_material(
        self, agents: Optional[List[str]], since: Optional[str], limit: int, case_id: Optional[str] = None
    ) -> HandoverMaterial:
        return self.handover.material(agents, since, limit, case_id)

    def command(self, agent: str, command: str, session_id: Optional[str]) -> CommandResultData:
        self.require(agent)
        return commands.run_command(self.runtime, self.sessions, self.worker_name, agent, command, session_id)
