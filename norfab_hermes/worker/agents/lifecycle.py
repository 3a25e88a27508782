"""
Agent lifecycle while the worker runs: create, clone, stop, start, restart
and delete one agent, without restarting the worker or touching its other
agents.

An agent is served by its profile's NorFab adapter in the running gateway:
starting an agent attaches that adapter (Hermes reads the profile's config
then), stopping detaches it. A run already in flight is never interrupted
unless the caller says so; otherwise stop, restart and delete refuse and
name the runs.
"""

import contextlib
import threading
import time
from typing import Any, Callable, Dict, Iterator, List, Optional, Protocol

from ...errors import AgentUnavailable, Busy, InvalidRequest, InventoryError
from ...models import AgentDefinition, ManageAgentResultData, check_agent_name, parse_agent
from ..hermes import cron, plugin, profile_store
from ..hermes.runtime import HermesRuntime
from ..tools.toolbox import ToolBox
from . import profiles
from .catalog import INVENTORY, NATIVE, RUNTIME, AgentCatalog

ADAPTER_TIMEOUT = 30.0  # seconds to attach or detach one profile's adapters
# an interrupted turn winds down within its grace (5 s), then its adapter work ends
QUIESCE_TIMEOUT, QUIESCE_POLL = 5.0 + ADAPTER_TIMEOUT, 0.1


class AgentRuns(Protocol):
    """What a lifecycle action needs of the worker's runs (the run registry)."""

    def accepted(self, agent: str) -> List[str]: ...

    def stop_agent(self, agent: str, message: str) -> None: ...


class Lifecycle:
    """
    Lifecycle actions on one worker's agents; one action at a time.

    Args:
        worker_name: for messages.
        catalog, runtime, runs, tools: the owners an action changes.
        definition_of: the current inventory definition of an inventory agent (read again for restart).
    """

    def __init__(
        self,
        worker_name: str,
        catalog: AgentCatalog,
        runtime: HermesRuntime,
        runs: "AgentRuns",
        tools: ToolBox,
        definition_of: Callable[[str], AgentDefinition],
    ) -> None:
        self.worker_name = worker_name
        self.catalog = catalog
        self.runtime = runtime
        self.runs = runs
        self.tools = tools
        self.definition_of = definition_of
        self._lock = threading.Lock()

    def act(
        self,
        action: str,
        agent: str,
        definition: Optional[Dict[str, Any]] = None,
        clone_from: Optional[str] = None,
        interrupt: bool = False,
    ) -> ManageAgentResultData:
        with self._lock:
            if action == "create":
                return self.create(agent, definition)
            if action == "clone":
                return self.clone(agent, clone_from, definition)
            if not self.catalog.known(agent):
                self.catalog.require(agent)  # says which agents there are
            if action == "stop":
                return self.answer(action, agent, self.stop(agent, interrupt))
            if action == "start":
                return self.answer(action, agent, self.start(agent))
            if action == "restart":
                return self.answer(action, agent, self.restart(agent, interrupt))
            if action == "delete":
                return self.delete(agent, interrupt)
        raise InvalidRequest(f"action: '{action}' is not an agent action")

    def answer(self, action: str, agent: str, done: List[str], owner: Optional[str] = None) -> ManageAgentResultData:
        """What the action did; a deleted agent's owner is the one it had."""
        return ManageAgentResultData(
            action=action,
            agent=agent,
            worker=self.worker_name,
            owner=owner or self.catalog.owners.get(agent),
            state=self.catalog.state(agent) if self.catalog.known(agent) else "deleted",
            done=done,
        )

    # ------------------------------------------------------------- create

    def create(self, agent: str, definition: Optional[Dict[str, Any]]) -> ManageAgentResultData:
        self._new_name(agent)
        if definition is None:
            raise InvalidRequest("definition: create needs an agent definition, inline or from a source (nf://...)")
        parsed = self._definition(agent, definition)
        with self._undone_on_failure(agent):
            self.catalog.render(agent, parsed, RUNTIME)
            done = [f"created profile {self.catalog.home(agent)}"]
            return self.answer("create", agent, done + self._serve(agent))

    def clone(self, agent: str, source: Optional[str], overrides: Optional[Dict[str, Any]]) -> ManageAgentResultData:
        self._new_name(agent)
        if not source:
            raise InvalidRequest("clone_from: clone needs the agent to copy, e.g. clone_from: interfaces")
        if source not in self.catalog.agents:
            self.catalog.require(source)  # unknown or invalid: say so
        native = self.catalog.owners[source] == NATIVE and not overrides
        if not native:
            base = self.catalog.agents[source].model_dump(exclude_defaults=True)
            parsed = self._definition(agent, profiles.merge(base, overrides or {}))
        with self._undone_on_failure(agent):
            profile_store.clone_profile(agent, source)
            done = [
                f"cloned profile {self.catalog.home(source)} to {self.catalog.home(agent)} (skills and configuration, no memory)"
            ]
            if native:
                self.catalog.serve_native(agent)
            else:
                self.catalog.render(agent, parsed, RUNTIME)
            if agent in self.catalog.errors:
                raise InvalidRequest(f"clone_from: {self.catalog.errors[agent]}")
            return self.answer("clone", agent, done + self._serve(agent))

    def _definition(self, agent: str, definition: Dict[str, Any]) -> AgentDefinition:
        """A runtime definition, checked all through before anything is written."""
        try:
            parsed = parse_agent(agent, definition, self.catalog.inventory.read_only_tasks)
        except InventoryError as error:
            raise InvalidRequest(f"definition: {error}") from None
        if not isinstance(parsed, AgentDefinition):
            raise InvalidRequest(
                f"definition: give agent '{agent}' the definition itself, not a from_yaml_file reference"
            )
        try:
            self.catalog.prepare(agent, parsed)
        except ValueError as error:
            raise InvalidRequest(f"definition: agent '{agent}': {error}") from None
        return parsed

    @contextlib.contextmanager
    def _undone_on_failure(self, agent: str) -> Iterator[None]:
        """A new agent that fails on the way leaves nothing: no adapter, profile, tools or catalog entry."""
        try:
            yield
        except BaseException:
            with contextlib.suppress(Exception):
                self._call(self.runtime.gateway.stop_profile(agent))
            self.catalog.forget(agent)
            self.tools.specs.pop(agent, None)
            if self.catalog.home(agent).exists():
                profile_store.delete_profile(agent)
            raise

    def _new_name(self, agent: str) -> None:
        try:
            check_agent_name(agent)
        except ValueError as error:
            raise InvalidRequest(f"agent: {error}") from None
        if self.catalog.known(agent) or self.catalog.home(agent).exists():
            raise InvalidRequest(f"agent: '{agent}' already exists on worker '{self.worker_name}'; choose another name")

    def _serve(self, agent: str) -> List[str]:
        """Tools and adapter for a new agent."""
        self._install_tools(agent)
        return self.start(agent) if agent not in self.catalog.errors else []

    # ------------------------------------------------------- stop / start

    def stop(self, agent: str, interrupt: bool) -> List[str]:
        if agent in self.catalog.stopped:
            return [f"agent '{agent}' was already stopped"]
        done = self._quiesce(agent, interrupt)
        self._call(self.runtime.gateway.stop_profile(agent))
        self.catalog.set_stopped(agent, True)
        return done + [f"detached agent '{agent}' from the gateway; its schedules wait until it starts again"]

    def start(self, agent: str) -> List[str]:
        if agent in self.catalog.errors:
            raise AgentUnavailable(f"agent '{agent}' cannot start: {self.catalog.errors[agent]}")
        if self.runtime.gateway.adapter(agent) is None:
            self._call(self.runtime.gateway.start_profile(agent, self.catalog.home(agent)))
        if self.runtime.gateway.adapter(agent) is None:
            raise AgentUnavailable(f"agent '{agent}': Hermes did not start its NorFab adapter; see the worker log")
        self.catalog.set_stopped(agent, False)
        return [f"attached agent '{agent}' to the gateway; it takes runs"]

    def restart(self, agent: str, interrupt: bool) -> List[str]:
        """Stop, read the definition again, start; a definition that cannot be served leaves the agent as it was."""
        owner = self.catalog.owners[agent]
        definition = None
        if owner != NATIVE:
            definition = self.definition_of(agent) if owner == INVENTORY else self.catalog.agents[agent]
            try:
                self.catalog.prepare(agent, definition)
            except ValueError as error:
                raise InvalidRequest(f"agent '{agent}' was not restarted, it runs as before: {error}") from None
        was_running = agent not in self.catalog.stopped
        saved = self.catalog.snapshot(agent)
        done = self.stop(agent, interrupt)
        try:
            if definition is None:
                self.catalog.serve_native(agent)
            else:
                self.catalog.render(agent, definition, owner, stopped=True)
            self._install_tools(agent)
            return done + self.start(agent)
        except Exception:
            self.catalog.restore(agent, saved)
            self._install_tools(agent)
            if was_running:
                self.start(agent)
            raise

    def _install_tools(self, agent: str) -> None:
        if agent in self.catalog.agents:
            self.tools.load({agent: self.catalog.agents[agent]})
            refused = self.tools.drop_refused(agent)
            if refused:
                raise InvalidRequest(f"definition: agent '{agent}': {refused}")
            plugin.install_tools(self.tools.specs)

    # -------------------------------------------------------------- delete

    def delete(self, agent: str, interrupt: bool) -> ManageAgentResultData:
        owner = self.catalog.owners[agent]
        if owner == INVENTORY:
            raise InvalidRequest(
                f"agent: '{agent}' is defined in the worker's inventory; remove it there and restart the worker "
                "(its sessions are kept)"
            )
        done = self._quiesce(agent, interrupt)
        self._call(self.runtime.gateway.stop_profile(agent))
        schedules = len(cron.list_jobs(self.catalog.home(agent)))
        home = profile_store.delete_profile(agent)
        self.catalog.forget(agent)
        self.tools.specs.pop(agent, None)
        done.append(
            f"removed profile {home}: its configuration, skills, memory and {schedules} schedule(s) with their "
            "history; its sessions stay in the worker's state.db"
        )
        return self.answer("delete", agent, done, owner)

    # -------------------------------------------------------------- helpers

    def _quiesce(self, agent: str, interrupt: bool) -> List[str]:
        """No run of the agent in flight: refuse, or interrupt them and wait for them to end."""
        active = self.runs.accepted(agent)
        if not active:
            return []
        if not interrupt:
            raise Busy(
                f"agent '{agent}' has runs in flight: {', '.join(active)}; wait for them to end, "
                "interrupt them, or pass interrupt=true"
            )
        self.runs.stop_agent(agent, "interrupted by a lifecycle action on the agent")
        deadline = time.time() + QUIESCE_TIMEOUT
        while self.runs.accepted(agent) and time.time() < deadline:
            time.sleep(QUIESCE_POLL)
        return [f"interrupted runs {', '.join(active)}"]

    def _call(self, coroutine: Any) -> None:
        self.runtime.submit(coroutine).result(ADAPTER_TIMEOUT)
