"""
The ``hermes`` NorFab worker: NorFab tasks over a :class:`HermesHost`.

``HermesWorker`` is NorFab's worker plus one task mixin per area (runs,
approvals, changes, records, sessions, agents, schedules, memory, evidence,
handover, service). Tasks are thin: NorFab validates the input, the task
calls the host and wraps the answer in a ``Result``; nothing from Hermes
appears in a result, results are this project's models.
"""

import logging
import os
import threading
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

import yaml
from norfab.core.worker import NFPWorker

from ..errors import AgentUnavailable, InvalidRequest, InventoryError
from ..identity import IdentityGate, ProofRefused
from ..models import AgentDefinition, AgentReference, OperatorDefinition, parse_agent, parse_inventory, parse_operators
from ..norfab_compat import answer_unknown_tasks
from .files import make_private
from .host import HermesHost
from .tasks.agents import AgentTasks
from .tasks.approvals import ApprovalTasks
from .tasks.base import hide_builtin_tasks
from .tasks.changes import ChangeTasks
from .tasks.evidence import EvidenceTasks
from .tasks.handover import HandoverTasks
from .tasks.memory import MemoryTasks
from .tasks.notify import NotifyTasks
from .tasks.records import RecordTasks
from .tasks.runs import RunTasks
from .tasks.schedules import ScheduleTasks
from .tasks.service import ServiceTasks
from .tasks.sessions import SessionTasks

SERVICE = "hermes"
CONTROL_JOB_SLOTS = 4  # NorFab job slots kept free for status, interrupt and get_* tasks
FETCH_ATTEMPTS = 10  # nf:// fetches at start-up race the filesharing worker's READY

log = logging.getLogger(__name__)


class HermesWorker(
    NFPWorker,
    RunTasks,
    ApprovalTasks,
    ChangeTasks,
    RecordTasks,
    SessionTasks,
    AgentTasks,
    ScheduleTasks,
    MemoryTasks,
    EvidenceTasks,
    HandoverTasks,
    NotifyTasks,
    ServiceTasks,
):
    """
    NorFab worker hosting the Hermes Agent gateway and serving named agents.

    Args:
        inventory: NorFab inventory object.
        broker: broker URL.
        worker_name: name of this worker.
        exit_event: set by NorFab when the worker must stop.
        init_done_event: set when the worker finished initialising.
        log_level: worker log level.
    """

    def __init__(
        self,
        inventory: Any,
        broker: str,
        worker_name: str,
        exit_event: Any = None,
        init_done_event: Any = None,
        log_level: Optional[str] = None,
    ) -> None:
        super().__init__(inventory, broker, SERVICE, worker_name, exit_event, log_level)
        hide_builtin_tasks()
        answer_unknown_tasks(SERVICE)
        self.init_done_event = init_done_event
        self.hermes_inventory: Dict[str, Any] = {}
        self.read_only_tasks: Dict[str, List[str]] = {}  # the inventory's, for every definition read
        self.host: Optional[HermesHost] = None
        self.init_errors: List[str] = []
        self.identity = IdentityGate(self.name, {})
        started = time.time()
        try:
            self.hermes_inventory = self.load_inventory() or {}
            try:
                self.identity.load(self._operators(self.hermes_inventory))
            except InventoryError as error:
                if self.hermes_inventory.get("operators"):  # operators named but unreadable: fail closed
                    self.identity.close(
                        f"worker '{self.name}' refuses every request: {error}; fix it and restart the worker"
                    )
                raise
            self.host = self._make_host()
            self.host.start()
        except Exception as error:
            # never raise from __init__: NorFab would wait for this worker forever
            log.exception(f"{self.name} - Failed to start Hermes")
            self.init_errors.append(str(error))
        finally:
            runs = self.host.inventory.max_concurrent_runs if self.host else 1
            # queued runs hold job slots too; control tasks keep their own
            self.max_concurrent_jobs = 2 * runs + CONTROL_JOB_SLOTS
            threading.Thread(target=self._stop_on_exit, name="hermes-exit-watch", daemon=True).start()
            self.init_done_event.set()
        log.info(f"{self.name} - Started in {time.time() - started:.1f}s")
        log.info(f"{self.name} - Identity: {self.identity_line()}")

    def identity_line(self) -> str:
        """One line: who may act on this worker."""
        if self.identity.closed is not None:
            return self.identity.closed
        if not self.identity.enabled:
            return (
                "no operators configured: ANY NorFab client that reaches the broker can act under any name "
                "(docs/safety.md#operators-and-keys)"
            )
        operators = ", ".join(sorted(self.identity.operators))
        return f"requests must be signed by an operator's SSH key ({len(self.identity.operators)}: {operators})"

    def reload_identity(self) -> None:
        """Take the operators the inventory holds now (keys and roles); a removed key is refused at once."""
        self.identity.load(self._operators(self.load_inventory() or {}))
        log.info(f"{self.name} - Reloaded operators: {self.identity_line()}")

    def _operators(self, inventory: Dict[str, Any]) -> Dict[str, OperatorDefinition]:
        operators = parse_inventory(inventory).operators
        if not isinstance(operators, str):
            return operators
        if not operators.startswith("nf://"):
            raise InventoryError(f"operators: '{operators}' must be an nf:// URL of a YAML file of operators")
        text = self.fetch_file(operators, raise_on_fail=False, read=True)
        if text is None:
            raise InventoryError(
                f"operators: could not fetch '{operators}'; check the path under the NorFab base directory"
            )
        try:
            return parse_operators(yaml.safe_load(text), f"operators file '{operators}'")
        except yaml.YAMLError as error:
            raise InventoryError(f"operators: '{operators}' is not valid YAML: {error}") from None

    def refused_request(
        self, task: str, arguments: Dict[str, Any], client: Optional[str], refused: ProofRefused
    ) -> None:
        """A request the identity gate refused: logged, and an audit entry of its own (nothing ran)."""
        log.warning(f"{self.name} - Refused {task} from client '{client}': {refused}")
        if self.host is None:
            return
        self.host.records.note(  # the refusal stands even when it cannot be recorded: note never raises
            "request.refused",
            arguments.get("agent") if isinstance(arguments.get("agent"), str) else None,
            None,
            client,
            task=task,
            reason=str(refused),
            operator=refused.operator,
            fingerprint=refused.fingerprint,
        )

    def _make_host(self) -> HermesHost:
        inventory = parse_inventory(self.hermes_inventory)
        self.read_only_tasks = inventory.read_only_tasks
        agents: Dict[str, AgentDefinition] = {}
        errors: Dict[str, str] = {}
        for name, data in inventory.agents.items():
            try:
                entry = parse_agent(name, data, self.read_only_tasks)
                agents[name] = self._load_reference(name, entry) if isinstance(entry, AgentReference) else entry
            except InventoryError as error:
                log.error(f"{self.name} - Agent '{name}' is unavailable: {error}")
                errors[name] = str(error)
        root = Path(inventory.hermes_home or os.path.join(self.base_dir, "hermes"))
        make_private(root)
        host = HermesHost(
            self.name, root, inventory, agents, errors, client=self.client, definition_of=self._inventory_definition
        )
        host.approvals.identity = self.identity
        self.identity.nonces = host.records.first_use  # a proof's nonce outlives a restart (and meets the fleet's)
        return host

    def _load_reference(self, name: str, reference: AgentReference) -> AgentDefinition:
        # at start-up the filesharing worker may not be ready yet: try for a while
        return self.fetch_definition(name, reference.from_yaml_file, FETCH_ATTEMPTS)

    def _inventory_definition(self, name: str) -> AgentDefinition:
        """An inventory agent's definition as the inventory says now (its nf:// file read again)."""
        entry = parse_inventory(self.load_inventory() or {}).agents.get(name)
        if entry is None:
            raise InvalidRequest(
                f"agent: '{name}' is no longer in the worker's inventory; restart the worker to drop it"
            )
        parsed = parse_agent(name, entry, self.read_only_tasks)
        return self.fetch_definition(name, parsed.from_yaml_file) if isinstance(parsed, AgentReference) else parsed

    def fetch_definition(self, name: str, url: str, attempts: int = 1) -> AgentDefinition:
        """An agent definition from a file NorFab serves (nf://...), validated like inventory."""
        if not url.startswith(("nf://", "git://")):
            raise InvalidRequest(f"source: '{url}' must be an nf:// or git:// URL of a file NorFab serves")
        for _ in range(attempts):
            text = self.fetch_file(url, raise_on_fail=False, read=True)
            if text is not None:
                break
            time.sleep(1)
        else:
            raise InventoryError(
                f"agent '{name}': could not fetch '{url}'; check the path under the NorFab base directory"
            )
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as error:
            raise InventoryError(f"agent '{name}': '{url}' is not valid YAML: {error}") from None
        parsed = parse_agent(name, data, self.read_only_tasks)
        if not isinstance(parsed, AgentDefinition):
            raise InventoryError(f"agent '{name}': '{url}' refers to another file; put the definition itself there")
        return parsed

    def _stop_on_exit(self) -> None:
        # NorFab waits for running jobs before it calls worker_exit(); a turn
        # in flight would hold shutdown, so stop the host as soon as exit starts
        self.exit_event.wait()
        self.worker_exit()

    def worker_exit(self) -> None:
        if self.host is not None:
            self.host.stop()

    def running_host(self) -> HermesHost:
        """The host, for tasks that need Hermes running."""
        if self.host is None:
            raise AgentUnavailable(f"worker '{self.name}' failed to start: {'; '.join(self.init_errors)}")
        return self.host
