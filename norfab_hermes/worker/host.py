"""
The host: one worker's Hermes, wired from small owners.

``HermesHost`` wires the rooms, starts and stops them, and is what the
Hermes plugin and adapter reach through the port (``hermes.port``); what
the NorFab tasks ask of it is in ``operations`` (its mixin). It owns no
state of its own beyond the wiring: the runtime (Hermes, gateway, loop
thread), the agent catalog (definitions, profiles, secrets), the tool box
and tool runner, the run registry and pipeline, the session queries and the
records (runs, approvals, usage, audit log) each keep theirs; the change
envelope (``changes``) keeps device locks, breakers and unknown outcomes.
"""

import logging
import threading
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

from ..models import (
    AgentDefinition,
    HermesInventory,
    OutcomeUnknown,
)
from ..safety import host_access
from .agents import profiles
from .agents.catalog import AgentCatalog
from .agents.lifecycle import Lifecycle
from .approvals.approver import Approver
from .approvals.inbox import ApprovalInbox
from .changes.control import ChangeControl
from .evidence.store import EvidenceStore
from .handover.material import Handover
from .hermes import metering, patches, plugin, port
from .hermes.gateway import Gateway
from .hermes.runtime import HermesRuntime
from .memory.store import AgentMemory
from .notify.notifier import Notifier
from .operations import HostOperations
from .records.store import Records
from .runs import turn
from .runs.budget import DailyUsage
from .runs.pipeline import RunPipeline
from .runs.recording import RunRecorder
from .runs.registry import RunRegistry
from .runs.run import Run
from .runs.storm import Storm, unshared
from .schedules.admission import Admission
from .schedules.ticker import Schedules
from .sessions.store import Sessions
from .tools.change import ChangeRunner
from .tools.delegation import Delegator, delegation_signer
from .tools.dispatch import Dispatcher
from .tools.kinds import DelegateCalls, NorfabCalls, ToolKind
from .tools.records import RecordsReader
from .tools.runner import ToolRunner
from .tools.specs import AnySpec
from .tools.toolbox import ToolBox

log = logging.getLogger(__name__)

STOP_ADAPTER_TIMEOUT = 30.0
CUT_BY_RESTART = (
    "[This turn was cut short: the hermes worker stopped before it finished, and it was not resumed. "
    "The request above was not completed; answer the next message for itself.]"
)
CUT_MID_CHANGE = (
    "[This turn was cut short while tool {tool} was changing {devices} (NorFab job {job}): the hermes worker "
    "stopped, and nobody knows whether the change was made. It is not made again; an operator must check the "
    "devices and acknowledge it before they take another change.]"
)


class HermesHost(HostOperations):
    """
    Hermes inside one hermes worker, serving its agents.

    Args:
        worker_name: the NorFab worker name.
        root: the instance root (``HERMES_HOME``).
        inventory: the worker's validated inventory.
        agents: valid agent definitions by name.
        errors: agent name to why it is unavailable.
        client: the worker's NFPClient, through which NorFab tools run.
    """

    def __init__(
        self,
        worker_name: str,
        root: Path,
        inventory: HermesInventory,
        agents: Dict[str, AgentDefinition],
        errors: Dict[str, str],
        client: Any = None,
        definition_of: Optional[Callable[[str], AgentDefinition]] = None,
    ) -> None:
        self.worker_name = worker_name
        self.inventory = inventory
        self.stopping = threading.Event()
        self.catalog = AgentCatalog(worker_name, root, inventory, agents, errors)
        self.runtime = HermesRuntime(worker_name, root, self.catalog.secrets, inventory.hermes_log_level)
        self.records = Records(root, worker_name, inventory.records)
        self.notifier = Notifier(worker_name, root, inventory.notify)
        recorder = RunRecorder(self.records, worker_name, self.catalog.secrets)
        self.runs = RunRegistry(worker_name, root, inventory.max_concurrent_runs, recorder)
        self.daily = DailyUsage(self.records, self.notifier.budget)
        self.sessions = Sessions(worker_name, self.runtime)
        self.tools = ToolBox(client, inventory.tool_retry_interval, inventory.read_only_tasks)
        self.lifecycle = Lifecycle(
            worker_name, self.catalog, self.runtime, self.runs, self.tools, definition_of or self.catalog.require
        )
        self.approvals = ApprovalInbox(worker_name, self.records, channels=[self.notifier])
        self.delegator = Delegator(client, worker_name, self.catalog.secrets, delegation_signer(inventory))
        self.pipeline = RunPipeline(
            worker_name,
            inventory,
            self.catalog,
            self.runtime,
            self.runs,
            self.sessions,
            self.tools,
            self.delegator,
            self.stopping,
            Storm(
                worker_name,
                self.records.deduplicate,
                fleet.holding if (fleet := self.records.fleet) is not None else unshared,
            ),
            self.daily,
            self.records.note,
        )
        self.evidence = EvidenceStore(
            root,
            inventory.evidence_retention_days,
            lambda run: run.session_id or self.sessions.current(run.agent, run.chat_id),
        )
        admission = Admission(self.runs.take_slot, self.runs.give_slot)
        self.runs.freed = admission.freed  # a slot any run gives back admits the due occurrence next in turn
        self.schedules = Schedules(
            worker_name,
            self.catalog,
            self.runtime,
            self.pipeline.run_scheduled,
            self.evidence,
            admission,
            self.records.claim,
            self.notifier.schedule_run,
        )
        self.memory = AgentMemory(worker_name, self.catalog.home, self.catalog.secrets)
        self.handover = Handover(
            worker_name,
            self.sessions,
            self.schedules.actions,
            self.evidence,
            self.catalog.available,
            self.catalog.secrets,
            self.records.runs,
        )
        dispatcher = Dispatcher(
            client,
            inventory.tool_result_max_chars,
            inventory.tool_concurrency_per_worker,
            self.catalog.secrets,
            self.evidence,
        )
        approver = Approver(self.runs.ask_operator, self.approvals)
        self.changes = ChangeControl(root, worker_name, self.records.db)
        records = RecordsReader(
            self.sessions, self.schedules.actions, self.evidence, self.catalog.known, self.catalog.secrets
        )
        # the executor of each tool kind (a spec's ``kind``); a new kind is one line here
        kinds: Dict[str, ToolKind] = {
            "norfab": NorfabCalls(dispatcher, approver),
            "change": ChangeRunner(
                dispatcher,
                approver,
                self.changes,
                self.tools.get,
                self.change_policy,
                worker_name,
                self.notifier.change,
            ),
            "delegate": DelegateCalls(self.delegator, dispatcher),
            "records": records,
        }
        self.tool_runner = ToolRunner(dispatcher, kinds)

    @property
    def root(self) -> Path:
        return self.runtime.root

    # ------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Prepare the instance root, import Hermes, render the agents' profiles, start the gateway."""
        cut_changes = self.changes.outcomes.recover()  # before the runs are settled: their runs end outcome_unknown
        cut_runs, cut_approvals = self.records.settle(cut_changes)
        self.notifier.cut_changes(cut_changes)
        self.notifier.start(self.approvals.decide_from_channel)
        if cut_runs or cut_approvals:
            log.warning(
                f"{self.worker_name} - Runs {cut_runs} and approvals {cut_approvals} were open when the worker "
                "last went down: recorded as ended by the restart, nothing of them runs again"
            )
        self.records.prune()
        self.runtime.prepare(profiles.root_config(self.catalog.max_turns_ceiling()))
        patches.serve_profile_secrets(self.catalog.secrets_for)
        patches.per_profile_iterations(self.catalog.iterations)
        metering.meter_model_requests(self.admit_model_request)
        self.catalog.sync_profiles()
        self.tools.load(self.catalog.agents)
        for name in list(self.catalog.agents):
            refused = self.tools.drop_refused(name)
            if refused:
                self.catalog.invalidate(name, refused)
        plugin.install_tools(self.tools.specs)
        port.bind(self)
        self.runtime.start_gateway(
            self.inventory.max_concurrent_runs, lambda gateway: self._settle_cut_turns(gateway, cut_changes)
        )
        for name in self.catalog.agents:
            if name in self.catalog.stopped:  # stopped before the restart: Hermes attached it with the others
                self.runtime.submit(self.runtime.gateway.stop_profile(name)).result(STOP_ADAPTER_TIMEOUT)
            elif self.runtime.gateway.adapter(name) is None:
                self.catalog.errors.setdefault(name, f"agent '{name}': Hermes did not start its NorFab adapter")
        self.schedules.start()
        self.notifier.agents(self.catalog.errors)
        self.evidence.prune()
        threading.Thread(target=self._retry_tools, name=f"{self.worker_name}-tool-retry", daemon=True).start()
        log.info(f"{self.worker_name} - Hermes gateway serving agents {sorted(self.catalog.available())}")

    def _retry_tools(self) -> None:
        """Until the worker stops: tools whose service did not answer are retried, so the
        worker turns ready on its own once that service is up (a run retries them too)."""
        while not self.stopping.wait(self.inventory.tool_retry_interval):
            if self.tools.retry_unavailable():
                plugin.install_tools(self.tools.specs)
                log.info(f"{self.worker_name} - Tools that were unavailable are now resolved")
            self.notifier.agents(self.catalog.errors)

    def _settle_cut_turns(self, gateway: Gateway, cut_changes: List[OutcomeUnknown]) -> None:
        # before the gateway starts: it would otherwise run cut turns again on its own
        for change in cut_changes:
            log.warning(
                f"{self.worker_name} - Change job {change.job_uuid} of run {change.run_id} ({change.tool} on "
                f"{', '.join(change.devices)}) was in flight when the worker stopped: its outcome is unknown"
            )
            note = CUT_MID_CHANGE.format(tool=change.tool, devices=", ".join(change.devices), job=change.job_uuid)
            gateway.close_unanswered_turn(change.session_id, note)
        cut = gateway.settle_cut_turns(self.root, self.runs.cut_by_last_stop(), CUT_BY_RESTART)
        if cut:
            log.warning(
                f"{self.worker_name} - Turns cut by the last shutdown, recorded and not resumed: sessions {cut}"
            )
        self.runs.reset_ledger()

    def stop(self) -> None:
        """Interrupt every run, stop the gateway and its loop; safe to call twice."""
        if self.stopping.is_set():
            return
        self.stopping.set()
        self.schedules.stop()
        self.runs.stop_all("worker shutting down", turn.GRACE, turn.POLL)
        self.runtime.stop()
        self.notifier.stop()
        port.unbind(self)
        log.info(f"{self.worker_name} - Hermes gateway stopped")

    # ---------------------------------------------------------------- state

    def require(self, agent: str) -> AgentDefinition:
        return self.pipeline.require(agent)

    def availability(self) -> Dict[str, bool]:
        up = not self.stopping.is_set()
        return {name: up and available for name, available in self.catalog.availability().items()}

    def problems(self) -> List[str]:
        """Why the worker or some of its agents are not ready."""
        return self.runtime.warnings + self.catalog.warnings + list(self.catalog.errors.values()) + self.tools.errors()

    # ------------------------------------------------- the port, for Hermes

    def run_for_session_key(self, session_key: str) -> Optional[Run]:
        return self.runs.for_session_key(session_key)

    def tune_agent(self, run: Run) -> None:
        self.runtime.gateway.tune_running_agent(run.session_key)

    def admit_model_request(self, session_key: str) -> Optional[str]:
        """Why a model request must not be sent (every one is counted against its run), or None."""
        run = self.runs.for_session_key(session_key)
        if run is None:
            return "a model request outside any NorFab run is not made: no run's budget would count it"
        return run.admit_model_request()

    def tool_refusal(self, agent: str, tool: str) -> Optional[str]:
        """Why agent ``agent`` may not call Hermes tool ``tool``, or None."""
        if tool in host_access.CONTAINED_TOOLS or tool in self.catalog.granted_tools(agent):
            return None
        return (
            f"tool {tool} reaches the worker host and is not granted to agent '{agent}' "
            "(only the hermes worker's inventory grants host tools, under host_tools)"
        )

    def tool_spec(self, agent: str, name: str) -> Optional[AnySpec]:
        return self.tools.get(agent, name)

    def call_tool(
        self, spec: AnySpec, arguments: Dict[str, Any], run: Optional[Run], interrupted: Callable[[], bool]
    ) -> str:
        return self.tool_runner.call(spec, arguments, run, interrupted)

    def ask_operator(self, session_key: str, question: str, default: Any) -> Any:
        return self.runs.ask_operator(session_key, question, default)

    def secrets(self) -> List[str]:
        return self.catalog.secrets()
