"""
One run of an agent: its budgets, what it reports as it goes (its journal),
the tool calls it made, the approvals it waited for, and what ended it.

A run is an invoke (with a NorFab job to report to, or started in the
background) or a scheduled check (no job, nobody to ask). Its journal keeps
every event, so a client that polls ``get_run`` reads the same progress a
live caller sees as job events.
"""

import logging
import uuid
from datetime import datetime, timezone
from typing import Any, Dict, List, Optional, Protocol, Set

from ...models import (
    ActiveRun,
    ApprovalInfo,
    ArtifactSummary,
    InvokeResultData,
    Lineage,
    Provenance,
    RunEvent,
    RunStateData,
    ToolCallSummary,
    now_iso,
)
from .budget import Budget, DailyUsage, Limits, Overrun
from .request import RunRequest

log = logging.getLogger(__name__)


def iso(seconds: Optional[float]) -> Optional[str]:
    return datetime.fromtimestamp(seconds, timezone.utc).isoformat(timespec="milliseconds") if seconds else None


class Asked(Protocol):
    """An approval the run asked for (``approvals.ApprovalRecord``)."""

    @property
    def state(self) -> str: ...

    def info(self) -> ApprovalInfo: ...


class RunLog(Protocol):
    """Where a run's tool calls are recorded as they happen (``recording.RunRecorder``)."""

    def tool_call(self, run: "Run") -> None: ...


class Run:
    """One invoke in flight: its budgets, progress and what ended it."""

    def __init__(
        self,
        request: RunRequest,
        chat_id: str,
        session_key: str,
        limits: Limits,
        job: Any,
        approval_timeout: float = 0.0,
        daily: Optional[DailyUsage] = None,
    ) -> None:
        self.run_id = uuid.uuid4().hex[:12]
        self.request = request
        self.provenance: Optional[Provenance] = None  # what answered: model, versions, definition digest
        self.approvers: List[str] = []  # the agent's, for tools that do not name their own
        self.needs_record: Optional[str] = None  # why the run cannot go on without the fleet's record
        self.approvals_required = 1  # the agent's, for tools that do not set their own
        self.log: Optional[RunLog] = None
        self.chat_id = chat_id
        self.session_key = session_key
        self.session_id = request.session_id  # the session it is on, once known
        self.job = job
        self.job_uuid = getattr(job, "juuid", None)
        self.budget = Budget(limits, request.agent, daily)
        self.stop_reason: Optional[str] = None
        self.stop_message = ""
        self.slot_held = False  # admitted with a run slot its scheduler took (and gives back)
        self.provider_errors: List[Dict[str, Any]] = []  # failed model requests, as Hermes reported them
        self.tool_calls: List[ToolCallSummary] = []
        self.artifacts: List[ArtifactSummary] = []  # every tool result received, kept as evidence
        self.warnings: List[str] = []
        self.approval_timeout = approval_timeout  # how long the run waits in the approval inbox
        self.approvals: List[Asked] = []
        self.events: List[RunEvent] = []  # the journal: every event, for get_run
        self.executing = False  # holds a run slot and its session (not queued)
        self.result: Optional[InvokeResultData] = None
        self.finished: Optional[float] = None
        self.reply = ""  # the message the agent is writing now, as far as it got
        self._reply_id: Optional[str] = None
        self._segment = 0

    # what the run was asked, and by whom: its request's

    @property
    def agent(self) -> str:
        return self.request.agent

    @property
    def instructions(self) -> str:
        return self.request.instructions

    @property
    def client(self) -> Optional[str]:  # None for a schedule
        return self.request.client

    @property
    def dedupe_key(self) -> Optional[str]:
        return self.request.dedupe_key

    @property
    def case_id(self) -> Optional[str]:
        return self.request.case_id

    @property
    def schedule_id(self) -> Optional[str]:
        return self.request.schedule_id

    @property
    def lineage(self) -> Optional[Lineage]:
        return self.request.lineage

    @property
    def interactive(self) -> bool:
        return self.request.interactive

    @property
    def response_schema(self) -> Optional[Dict[str, Any]]:
        return self.request.response_schema

    def write_reply(self, message_id: str, text: str) -> None:
        """The agent's reply as the gateway streams it: what is new goes to the caller as a job event.

        The gateway edits one message with ever longer text at most a few
        times a second; a new message (after tool calls) starts a new segment.
        Reply events stay out of the journal: get_run shows ``reply`` instead.
        """
        if message_id != self._reply_id:
            self._reply_id, self._segment, self.reply = message_id, self._segment + 1, ""
        replace = not text.startswith(self.reply)
        delta = text if replace else text[len(self.reply) :]
        self.reply = text
        if delta:
            self._tell_job(
                "reply", "INFO", extras={"reply": {"segment": self._segment, "delta": delta, "replace": replace}}
            )

    def event(self, message: str, severity: str = "INFO", **kwargs: Any) -> None:
        """Record an event in the journal and send it to the caller's NorFab job, if any."""
        self.events.append(RunEvent(time=now_iso(), message=message, severity=severity))
        self._tell_job(message, severity, **kwargs)

    def _tell_job(self, message: str, severity: str, **kwargs: Any) -> None:
        if self.job is None:  # in the background or scheduled: the journal is the record
            return
        try:
            self.job.event(message, severity=severity, **kwargs)
        except Exception as error:  # events are best effort, never fail a run
            log.debug(f"Run {self.run_id} event failed: {error}")

    @property
    def state(self) -> str:
        if self.finished is not None:
            return "finished"
        if any(a.state == "pending" for a in self.approvals):
            return "waiting_for_approval"
        return "running" if self.executing else "queued"

    def stop(self, reason: str, message: str) -> None:
        """Ask the run to end; the first reason given is the one it ends with."""
        if self.stop_reason is None:
            self.stop_reason, self.stop_message = reason, message

    # ------------------------------------------------------------- budgets

    @property
    def started(self) -> float:
        return self.budget.started

    @property
    def max_turns(self) -> int:
        return self.budget.limits.max_turns

    @property
    def api_calls(self) -> int:
        return self.budget.model_requests

    def remaining(self) -> float:
        return self.budget.remaining()

    def check_clock(self) -> None:
        """Past its wall-clock budget the run stops."""
        self._overrun(self.budget.clock())

    def admit_model_request(self) -> Optional[str]:
        """Count a model request of the run (its own, a subagent's or an auxiliary one); why it must
        not be sent once the run is stopping or its max_turns are spent."""
        if self.stop_reason is not None:
            return f"the run is stopping ({self.stop_message})"
        refusal = self._overrun(self.budget.model_request())
        if refusal is None:
            self.event(f"model request {self.api_calls} started")
        return refusal

    def admit_tool_call(self, tool: str, digest: str) -> Optional[str]:
        """Count a NorFab tool call; why it must not be made when it breaks the run's budget.

        A refused call stops the run: a model that loops or fans out keeps
        doing so, and every further call would reach the network.
        """
        if self.stop_reason is not None:
            return f"the run is stopping ({self.stop_message})"
        return self._overrun(self.budget.tool_call(tool, digest))

    def touched(self, devices: Set[str]) -> None:
        """Devices a tool call reached; past the budget the run stops."""
        self._overrun(self.budget.reached(devices))

    def _overrun(self, overrun: Overrun) -> Optional[str]:
        if overrun is None:
            return None
        reason, message = overrun
        if self.stop_reason is None:
            self.warnings.append(message)
            self.event(f"run {self.run_id} stopping: {message}", severity="WARNING")
        self.stop(reason.value, message)
        return message

    def expect_request(self, model: Optional[str], prompt_tokens: int) -> None:
        """Hermes is about to send a model request of about ``prompt_tokens`` to ``model``."""
        self.budget.expect(model, prompt_tokens)

    def count_usage(self, model: Optional[str], prompt: int, completion: int) -> None:
        """A model answered, using these tokens: counted against the run's and the agent's budgets."""
        for warning in self.budget.model_usage(model, prompt, completion):
            self.event(f"run {self.run_id}: {warning}", severity="WARNING")

    def record_tool_call(self, summary: ToolCallSummary) -> None:
        self.tool_calls.append(summary)
        if self.log is not None:
            self.log.tool_call(self)

    def approval_infos(self) -> List[ApprovalInfo]:
        return [approval.info() for approval in self.approvals]

    def summary(self) -> ActiveRun:
        return ActiveRun(
            run_id=self.run_id,
            job_uuid=self.job_uuid,
            agent=self.agent,
            session_id=self.session_id,
            started=datetime.fromtimestamp(self.started, timezone.utc).isoformat(),
            schedule_id=self.schedule_id,
            tokens=self.budget.tokens,
            max_tokens=self.budget.limits.max_tokens,
        )

    def state_data(self, worker: str, offset: int = 0, deduplicated: bool = False) -> RunStateData:
        """The run as get_run shows it: events from ``offset`` on."""
        events = self.events[offset:]
        return RunStateData(
            run_id=self.run_id,
            agent=self.agent,
            worker=worker,
            session_id=self.session_id,
            state=self.state,
            stop_reason=self.stop_reason if self.finished is not None else None,
            started=self.summary().started,
            events=events,
            next_offset=offset + len(events),
            approvals=self.approval_infos(),
            tool_calls=self.result.tool_calls if self.result else list(self.tool_calls),
            reply=self.reply,
            result=self.result,
            instructions=self.instructions,
            client=self.client,
            schedule_id=self.schedule_id,
            finished=iso(self.finished),
            deduplicated=deduplicated,
            case_id=self.case_id,
            provenance=self.provenance,
        )
