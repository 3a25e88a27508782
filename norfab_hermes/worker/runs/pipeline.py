"""
The way of every run, from the request to its envelope: checks, admission
with its budgets, a run slot and its session, the gateway turn, the result.

An invoke runs it in its NorFab job, ``start_run`` on a thread of its own,
a due schedule on the scheduler's; each run ends (and is kept for
``get_run``) whatever happens on the way. Admission answers a request that
repeats a ``dedupe_key`` with the earlier run, and refuses one over the
agent's runs per minute or daily budget (``storm``, ``budget``).
"""

import logging
import threading
import time
from typing import Any, Callable, Dict, Optional, Union

from ...errors import AgentUnavailable, Busy, InvalidRequest, OverBudget, RecordsUnavailable, UnknownRun
from ...models import AgentDefinition, HermesInventory, InvokeResultData, RunStateData, StopReason
from ..agents.catalog import AgentCatalog
from ..hermes import metering, plugin
from ..hermes.gateway import Gateway
from ..hermes.runtime import HermesRuntime
from ..sessions.store import Sessions
from ..tools.delegation import Delegator
from ..tools.toolbox import ToolBox
from . import answer, provenance, turn
from .budget import DailyUsage, Limits
from .registry import RunRegistry
from .request import RunRequest
from .run import Run
from .storm import Storm

log = logging.getLogger(__name__)

SESSION_ID_WAIT = 2.0  # seconds start_run waits for a new session's id before answering without it


class RunPipeline:
    """
    Runs of one worker's agents.

    Args:
        worker_name: for messages and events.
        inventory: the worker's inventory (budget defaults).
        catalog, runtime, runs, sessions, tools, delegator: the owners a run goes through.
        stopping: set when the worker shuts down; no run starts after it.
    """

    def __init__(
        self,
        worker_name: str,
        inventory: HermesInventory,
        catalog: AgentCatalog,
        runtime: HermesRuntime,
        runs: RunRegistry,
        sessions: Sessions,
        tools: ToolBox,
        delegator: Delegator,
        stopping: threading.Event,
        storm: Optional[Storm] = None,
        daily: Optional[DailyUsage] = None,
        note: Callable[..., None] = lambda kind, **details: None,
    ) -> None:
        self.worker_name = worker_name
        self.inventory = inventory
        self.catalog = catalog
        self.runtime = runtime
        self.runs = runs
        self.sessions = sessions
        self.tools = tools
        self.delegator = delegator
        self.stopping = stopping
        self.storm = storm or Storm(worker_name)
        self.daily = daily
        self.note = note  # an audit entry: note(kind, agent=, run_id=, actor=, **data)

    def require(self, agent: str) -> AgentDefinition:
        """The definition of an agent that can take a run now; AgentUnavailable says why not."""
        definition = self.catalog.require(agent)
        if self.stopping.is_set():
            raise AgentUnavailable(f"worker '{self.worker_name}' is shutting down")
        return definition

    # ------------------------------------------------------------ requests

    def invoke(self, request: RunRequest, job: Any) -> InvokeResultData:
        """A run in the caller's NorFab job: its envelope when it ends."""
        check_instructions(request.instructions)
        self._check_lineage(request)
        run = self._accept(request, job)
        if isinstance(run, str):  # the run its dedupe_key started earlier
            return self._earlier_result(request, run, job)
        return self._execute(run)

    def run_scheduled(
        self,
        agent: str,
        prompt: str,
        schedule_id: str,
        response_schema: Optional[Dict[str, Any]] = None,
        slot_held: bool = False,
    ) -> InvokeResultData:
        """A due schedule, as a run of its agent: a session of its own, nobody attached.

        ``slot_held``: the scheduler's admission took a run slot for it (and gives it back).
        """
        request = RunRequest(agent, prompt, schedule_id=schedule_id, response_schema=response_schema)
        run = self._accept(request, None)
        if isinstance(run, str):  # a schedule has no dedupe_key: never an earlier run
            raise RuntimeError(f"schedule {schedule_id} was answered with earlier run {run}")
        run.slot_held = slot_held
        return self._execute(run)

    def start_run(self, request: RunRequest) -> RunStateData:
        """A run in the background: its ids at once; get_run follows it."""
        check_instructions(request.instructions)
        run = self._accept(request, None)
        if isinstance(run, str):  # the run its dedupe_key started earlier
            return self.runs.state(request.agent, run, deduplicated=True)
        threading.Thread(target=self._background, args=(run,), name=f"hermes-run-{run.run_id}", daemon=True).start()
        deadline = time.time() + SESSION_ID_WAIT
        while run.session_id is None and run.finished is None and time.time() < deadline:
            time.sleep(turn.POLL / 2)
        return self.run_state(request.agent, run.run_id)

    def run_state(self, agent: str, run_id: str, offset: int = 0) -> RunStateData:
        """A run of the agent, in flight or from its record (also of an agent since deleted)."""
        try:
            return self.runs.state(agent, run_id, offset)
        except UnknownRun:
            self.catalog.require_known(agent)  # an unknown agent says which agents there are
            raise

    def _earlier_result(self, request: RunRequest, run_id: str, job: Any) -> InvokeResultData:
        """A repeated invoke gets the envelope of the run its dedupe_key started, once that run ends."""
        agent, key = request.agent, request.dedupe_key
        if job is not None:
            job.event(f"run {run_id} already started with dedupe_key '{key}': waiting for its result")
        limits = Limits.of(self.require(agent), self.inventory, 1, request.run_timeout, job)
        deadline = time.time() + limits.seconds
        run = self.runs.live(run_id)
        while run is not None and run.finished is None and time.time() < deadline:
            time.sleep(turn.POLL)
        state = self.runs.state(agent, run_id)
        if state.state != "finished":
            raise Busy(f"run {run_id} with dedupe_key '{key}' is still running; follow it with get_run")
        if state.result is None:
            raise UnknownRun(f"run {run_id} with dedupe_key '{key}' ended without a result: {state.stop_reason}")
        return state.result.model_copy(update={"deduplicated": True})

    # --------------------------------------------------------------- steps

    def _check_lineage(self, request: RunRequest) -> None:
        """A delegated run's lineage, as the asking run's worker confirms it; a cycle is refused."""
        agent, asked_by = request.agent, request.lineage
        if asked_by is None:
            return
        here = f"{agent}@{self.worker_name}"
        if here in asked_by.chain:
            raise InvalidRequest(
                f"lineage: {here} is already in the chain {' -> '.join(asked_by.chain)}; a delegation cycle is refused"
            )
        self.require(agent)
        refusal = self.delegator.confirm(asked_by, agent)
        if refusal:
            log.warning(
                f"{self.worker_name} - Refused a run of '{agent}' for client {request.client} claiming lineage "
                f"{asked_by.model_dump()}: {refusal}"
            )
            raise InvalidRequest(f"lineage: {refusal}; only a delegate of the asking run's agent may pass a lineage")

    def _accept(self, request: RunRequest, job: Any) -> Union[Run, str]:
        """A new run of the agent, with its budgets, tracked from now on (queued until it executes);
        or, for a repeated dedupe_key, the id of the earlier run."""
        agent = request.agent
        definition = self.require(agent)
        if self.tools.retry_unavailable():
            plugin.install_tools(self.tools.specs)
        limits = Limits.of(definition, self.inventory, self.catalog.max_turns(definition), request.run_timeout, job)
        window, per_minute = definition.dedupe_window, definition.max_runs_per_minute
        try:
            with self.storm.admission(agent, request.dedupe_key, window, per_minute) as ticket:
                if ticket.earlier is not None:
                    return ticket.earlier
                refusal = self.daily.refusal(agent, limits.daily) if self.daily else None
                if refusal:
                    raise OverBudget(f"{refusal}; its runs start again the next day (UTC) or with a bigger budget")
                chat_id = self.sessions.chat_for(agent, request.session_id)
                session_key = Gateway.session_key(chat_id, agent)
                run = Run(request, chat_id, session_key, limits, job, definition.approval_timeout, self.daily)
                run.provenance = provenance.of_agent(
                    definition,
                    self.tools.specs.get(agent, {}),
                    self.catalog.effective_config(agent),
                    self.inventory.model,
                )
                run.approvers = list(definition.approvers)
                run.needs_record = needs_record(agent, definition, self.tools.specs.get(agent, {}))
                run.approvals_required = definition.approvals_required
                self.runs.track(run)
                ticket.started(run.run_id)
                return run
        except (Busy, OverBudget, RecordsUnavailable) as refused:
            details = {"reason": str(refused), "code": refused.code, "schedule_id": request.schedule_id}
            self.note("run.refused", agent=agent, actor=request.client, **details)
            raise

    def _background(self, run: Run) -> None:
        try:
            self._execute(run)
        except Exception as error:  # a refused or failed run still ends, with the reason in its journal
            run.warnings.append(str(error))
            run.event(f"run {run.run_id} failed: {error}", severity="WARNING")

    def _execute(self, run: Run) -> InvokeResultData:
        """Wait for a run slot and the session, run the turn, build the envelope; the run ends either way."""
        result = None
        try:
            with self.runs.slot(run), self.runs.chat_turn(run), self.runs.executing(run):
                run.event(
                    f"run {run.run_id} started on agent '{run.agent}'",
                    extras={
                        "run_id": run.run_id,
                        "agent": run.agent,
                        "session_id": run.session_id,
                        "worker": self.worker_name,
                        "job_uuid": run.job_uuid,
                        "case_id": run.case_id,
                        "lineage": run.lineage.model_dump() if run.lineage else None,
                    },
                )
                first = self._turn(run, answer.ask(run.instructions, run.response_schema))
                result = answer.settle(run, first, lambda text: self._turn(run, text))
            run.event(
                f"run {run.run_id} {result.stop_reason}", extras={"run_id": run.run_id, "session_id": result.session_id}
            )
            return result
        finally:
            metering.forget_model_requests(run.session_key)
            self.runs.finish(run, result)

    def _turn(self, run: Run, text: str) -> InvokeResultData:
        """One gateway turn of the run and its envelope; a turn that ended unanswered is closed in its session."""
        finished = turn.wait(self.runtime, run, text, self.stopping)
        result = turn.envelope(self.runtime, run, finished, self.worker_name, self.catalog.secrets())
        if result.stop_reason != StopReason.completed.value and finished is not None:
            note = f"[This turn ended without an answer ({result.stop_reason}: {run.stop_message or 'see the run warnings'}).]"
            self.runtime.gateway.close_unanswered_turn(result.session_id, note)
        return result


def needs_record(agent: str, definition: Any, specs: Dict[str, Any]) -> Optional[str]:
    """Why a run of the agent cannot go on without the fleet's record (its changes lock devices there), or
    None: a read-only investigation, whose records the worker keeps while the record does not answer."""
    changing = sorted(name for name, spec in specs.items() if getattr(spec, "changes", False))
    changing += sorted(definition.workflows)
    if not changing:
        return None
    return f"agent '{agent}' can change devices ({', '.join(changing)}) and their device locks are held there"


def check_instructions(instructions: str) -> None:
    if instructions.lstrip().startswith("/"):
        raise InvalidRequest(
            f"instructions: '{instructions.split()[0]}' looks like a slash command; use the command task for commands"
        )
