"""
The agents of one worker: their definitions, who owns each, which of them
can take runs and why not, and the native Hermes profile each is served as.

Every agent is one Hermes profile under ``<instance root>/profiles/<agent>``
and has an owner:

* ``inventory``: defined in the worker's inventory, which stays authoritative
  at every start; an agent removed from inventory keeps its profile (its
  history) and is no longer served;
* ``runtime``: created with ``manage_agent``; its definition is kept in its
  profile (``norfab.yaml``) and it is served again after a restart;
* ``native``: a profile an operator made with Hermes itself; it is served as
  it is, with what serving through NorFab needs added.

The provider keys a profile needs stay in this catalog's memory and are
handed to Hermes through its secret scope, never written.
"""

import copy
import os
from pathlib import Path
from typing import Any, Dict, List, Optional, Set, Tuple

import yaml

from ...errors import AgentUnavailable, InventoryError
from ...models import AgentDefinition, HermesInventory, check_agent_name, parse_agent
from ...safety import host_access
from ..files import write_file
from ..hermes import profile_store, tool_catalog
from ..hermes.plugin import NORFAB_TOOLSET
from . import profiles

MIN_SECRET_CHARS = 6  # shorter values would mask ordinary words
INVENTORY, RUNTIME, NATIVE = "inventory", "runtime", "native"


class AgentCatalog:
    """
    Agent definitions by name, their owners and states, and the errors of those that cannot run.

    Args:
        worker_name: for messages.
        root: the instance root.
        inventory: the worker's validated inventory.
        agents: valid inventory definitions by agent name.
        errors: agent name to why it is unavailable (invalid or unreadable definition).
    """

    def __init__(
        self,
        worker_name: str,
        root: Path,
        inventory: HermesInventory,
        agents: Dict[str, AgentDefinition],
        errors: Dict[str, str],
    ) -> None:
        self.worker_name = worker_name
        self.root = Path(root)
        self.inventory = inventory
        self.agents = dict(agents)
        self.errors = dict(errors)
        self.owners: Dict[str, str] = {name: INVENTORY for name in {*agents, *errors}}
        self.stopped: Set[str] = set()
        self.warnings: List[str] = []  # problems that do not stop an agent
        self._secrets: Dict[Path, Dict[str, str]] = {}  # profile home -> its provider keys
        # the values to mask, made once per change of _secrets: every log line and tool result is scrubbed
        # with them, and with hundreds of agents making the list per line cost a turn milliseconds
        self._masks: Optional[List[str]] = None
        # agent -> (config.yaml's inode, mtime, size), its parsed config: get_agents reads every agent's
        self._configs: Dict[str, Tuple[Tuple[int, int, int], Dict[str, Any]]] = {}

    def home(self, agent: str) -> Path:
        return self.root / "profiles" / agent

    def max_turns(self, definition: AgentDefinition) -> int:
        return int((definition.hermes.get("agent") or {}).get("max_turns") or self.inventory.max_turns)

    def iterations(self, agent: str) -> Optional[int]:
        """Hermes' tool-loop budget for the agent: its model calls less the closing summary call,
        which Hermes makes when the loop budget runs out, so a run makes at most max_turns calls."""
        definition = self.agents.get(agent)
        return max(1, self.max_turns(definition) - 1) if definition else None

    def max_turns_ceiling(self) -> int:
        """One more than any agent's budget: Hermes reads one iteration limit for all profiles,
        and the host stops each run at its own budget first."""
        return max([self.max_turns(d) for d in self.agents.values()] + [self.inventory.max_turns]) + 1

    # ---------------------------------------------------------------- start

    def sync_profiles(self) -> None:
        """Render every inventory agent's profile; serve runtime and native profiles found on disk."""
        for name, definition in list(self.agents.items()):
            self.render(name, definition, INVENTORY, profiles.read_marker(self.home(name)).get("stopped", False))
        for name in profiles.served_profiles(self.root):
            if name in self.errors:  # an invalid inventory agent: its profile stays, unserved
                profiles.disable_profile(self.home(name))
            if name in self.owners or not valid_name(name):  # Hermes' own directories (e.g. default)
                continue
            marker = profiles.read_marker(self.home(name))
            if marker.get("owner") == INVENTORY:  # left inventory: its history stays, it is not served
                profiles.disable_profile(self.home(name))
            elif marker.get("owner") == RUNTIME:
                try:
                    saved = parse_agent(name, marker.get("definition"), self.inventory.read_only_tasks)
                    if not isinstance(saved, AgentDefinition):  # a reference is resolved before it is saved
                        raise InventoryError(
                            f"agent '{name}': its saved definition is a file reference; create it again"
                        )
                    self.render(name, saved, RUNTIME, marker.get("stopped", False))
                except InventoryError as error:
                    self.owners[name], self.errors[name] = RUNTIME, str(error)
            else:
                self.serve_native(name)
        for name, definition in self.agents.items():
            if (
                definition.tools or definition.delegates or definition.records
            ) and NORFAB_TOOLSET not in definition.toolsets:
                self.warnings.append(
                    f"agent '{name}' defines tools, delegates or records but its toolsets do not list '{NORFAB_TOOLSET}': "
                    "they are not offered"
                )

    def prepare(self, name: str, definition: AgentDefinition) -> Tuple[Dict[str, Any], Dict[str, str]]:
        """The profile config and provider secrets of a definition; ValueError says why it cannot be served."""
        unknown = tool_catalog.unknown_toolsets([t for t in definition.toolsets if t != NORFAB_TOOLSET])
        if unknown:
            raise ValueError(
                f"toolsets {', '.join(repr(t) for t in unknown)} are not Hermes toolsets "
                f"(known: {NORFAB_TOOLSET}, {', '.join(tool_catalog.toolset_names())})"
            )
        self.check_host_tools(name, [t for t in definition.toolsets if t != NORFAB_TOOLSET])
        return profiles.profile_config(
            name,
            definition,
            self.inventory.model,
            self.max_turns(definition),
            dict(os.environ),
            profile_store.provider_key_vars,
        )

    def check_host_tools(self, name: str, toolsets: List[str]) -> None:
        """ValueError when the toolsets offer tools that reach the worker host and the inventory does not grant them."""
        denied = [
            t for t in host_access.host_tools(tool_catalog.offered_tools(toolsets)) if t not in self.granted_tools(name)
        ]
        if denied:
            raise ValueError(
                f"toolsets {', '.join(toolsets)} give the model tools that reach the worker host "
                f"({', '.join(denied)}); only the hermes worker's inventory can grant them to this agent "
                f"(host_tools: {{{name}: [{', '.join(toolsets)}]}}), never an agent definition"
            )

    def granted_tools(self, name: str) -> List[str]:
        """Host tools the worker's inventory grants to agent ``name`` (toolsets expanded)."""
        grants = self.inventory.host_tools.get(name) or []
        toolsets = [g for g in grants if not tool_catalog.unknown_toolsets([g])]
        return sorted(set(grants) - set(toolsets) | set(tool_catalog.offered_tools(toolsets) if toolsets else []))

    def host_tools(self, name: str) -> List[str]:
        """The tools reaching the worker host that agent ``name`` is offered (all granted by inventory)."""
        if not self.inventory.host_tools.get(name) or name not in self.agents:
            return []
        toolsets = (
            profiles.native_toolsets(self.home(name)) if self.owners.get(name) == NATIVE else self.agents[name].toolsets
        )
        offered = tool_catalog.offered_tools([t for t in toolsets if t != NORFAB_TOOLSET])
        return host_access.host_tools(offered)

    def render(self, name: str, definition: AgentDefinition, owner: str, stopped: bool = False) -> None:
        """Write the profile of an agent the worker defines; an unusable definition makes it invalid."""
        home = profile_store.ensure_profile(name)
        self.owners[name] = owner
        self.errors.pop(name, None)
        try:
            config, secrets = self.prepare(name, definition)
        except ValueError as error:
            self.invalidate(name, str(error))
            return
        profiles.write_profile(home, config, profiles.soul(definition))
        kept = definition.model_dump(exclude_defaults=True) if owner == RUNTIME else None
        profiles.write_marker(home, owner, kept, stopped)
        self._secrets[home.resolve()] = secrets
        self._masks = None
        self.agents[name] = definition
        self._set_stopped(name, stopped)

    def invalidate(self, name: str, reason: str) -> None:
        """An agent whose definition cannot be served: unavailable, saying why; its profile stays, unserved."""
        self.errors[name] = f"agent '{name}': {reason}"
        self.agents.pop(name, None)
        profiles.disable_profile(self.home(name))

    def serve_native(self, name: str) -> None:
        """A profile made with Hermes itself: served with its own model, instructions and toolsets,
        unless they reach the worker host without the inventory's grant."""
        self.owners[name] = NATIVE
        try:
            self.check_host_tools(name, profiles.native_toolsets(self.home(name)))
        except ValueError as error:
            self.invalidate(name, str(error))
            return
        self.errors.pop(name, None)
        config = profiles.serve_native(self.home(name))
        max_turns = (config.get("agent") or {}).get("max_turns")
        soul = self.home(name) / "SOUL.md"
        instructions = (soul.read_text().strip() if soul.exists() else "") or "native Hermes profile"
        self.agents[name] = AgentDefinition(
            instructions=instructions,
            description=f"native Hermes profile {name}",
            hermes={"agent": {"max_turns": max_turns}} if max_turns else {},
        )

    # -------------------------------------------------------------- changes

    def set_stopped(self, name: str, stopped: bool) -> None:
        """Mark an agent stopped or running; its profile remembers it across restarts."""
        if self.owners.get(name) in (INVENTORY, RUNTIME):
            marker = profiles.read_marker(self.home(name))
            profiles.write_marker(self.home(name), self.owners[name], marker.get("definition"), stopped)
        self._set_stopped(name, stopped)

    def _set_stopped(self, name: str, stopped: bool) -> None:
        if stopped:
            self.stopped.add(name)
        else:
            self.stopped.discard(name)

    def snapshot(self, name: str) -> Dict[str, Any]:
        """What restore() puts back: the agent's entries and the profile files the worker owns."""
        home = self.home(name)
        return {
            "entries": {t: table.get(name) for t, table in self._tables().items()},
            "stopped": name in self.stopped,
            "secrets": self._secrets.get(home.resolve()),
            "files": {f: (home / f).read_bytes() for f in profiles.OWNED_FILES if (home / f).exists()},
        }

    def restore(self, name: str, saved: Dict[str, Any]) -> None:
        for table_name, table in self._tables().items():
            value = saved["entries"][table_name]
            if value is None:
                table.pop(name, None)
            else:
                table[name] = value
        self._set_stopped(name, saved["stopped"])
        if saved["secrets"] is not None:
            self._secrets[self.home(name).resolve()] = saved["secrets"]
            self._masks = None
        for filename, data in saved["files"].items():
            write_file(self.home(name) / filename, data.decode())

    def _tables(self) -> Dict[str, Dict[Any, Any]]:
        return {"agents": self.agents, "errors": self.errors, "owners": self.owners}

    def forget(self, name: str) -> None:
        """A deleted agent."""
        for table in (self.agents, self.errors, self.owners):
            table.pop(name, None)
        self.stopped.discard(name)
        self._secrets.pop(self.home(name).resolve(), None)
        self._masks = None

    # --------------------------------------------------------------- reads

    def secrets_for(self, home: Path) -> Dict[str, str]:
        """The provider keys of the profile at ``home`` (Hermes' secret scope)."""
        home = Path(home)
        found = self._secrets.get(home)  # the scope's own path first: no file system look-up per turn
        return found if found is not None else self._secrets.get(home.resolve(), {})

    def secrets(self) -> List[str]:
        """Secret values to mask, longest first so no shorter one splits a longer."""
        masks = self._masks
        if masks is None:
            values = {v for keys in self._secrets.values() for v in keys.values() if len(v) >= MIN_SECRET_CHARS}
            masks = self._masks = sorted(values, key=len, reverse=True)
        return masks

    def require(self, agent: str) -> AgentDefinition:
        """The definition of an agent that can take runs; AgentUnavailable says why not."""
        if agent in self.errors:
            raise AgentUnavailable(
                f"agent '{agent}' on worker '{self.worker_name}' is unavailable: {self.errors[agent]}"
            )
        self.require_known(agent)
        if agent in self.stopped:
            raise AgentUnavailable(
                f"agent '{agent}' on worker '{self.worker_name}' is stopped; start it with manage_agent action 'start'"
            )
        return self.agents[agent]

    def known(self, agent: str) -> bool:
        return agent in self.owners

    def require_known(self, agent: str) -> None:
        """An agent of this worker, whatever its state; AgentUnavailable lists the known ones."""
        if agent not in self.owners:
            known = ", ".join(sorted(self.available())) or "none"
            raise AgentUnavailable(f"agent '{agent}' not found on worker '{self.worker_name}'; known agents: {known}")

    def available(self) -> List[str]:
        return [name for name in self.agents if name not in self.errors and name not in self.stopped]

    def state(self, agent: str) -> str:
        """running, stopped or invalid."""
        if agent in self.errors:
            return "invalid"
        return "stopped" if agent in self.stopped else "running"

    def availability(self) -> Dict[str, bool]:
        """Every agent, valid or not, and whether it can take runs."""
        return {name: self.state(name) == "running" for name in sorted(self.owners)}

    def effective_config(self, agent: str) -> Dict[str, Any]:
        """The config.yaml Hermes reads for the agent's profile, parsed again only when the file
        changed: a new inode (files are replaced whole), mtime or size shows an edit on disk."""
        path = self.home(agent) / "config.yaml"
        try:
            stat = path.stat()
        except FileNotFoundError:
            self._configs.pop(agent, None)
            return {}
        key = (stat.st_ino, stat.st_mtime_ns, stat.st_size)
        cached = self._configs.get(agent)
        if cached is None or cached[0] != key:
            cached = self._configs[agent] = (key, yaml.safe_load(path.read_text()) or {})
        return copy.deepcopy(cached[1])  # the caller's to change, the cache stays as read


def valid_name(name: str) -> bool:
    try:
        check_agent_name(name)
    except ValueError:
        return False
    return True
