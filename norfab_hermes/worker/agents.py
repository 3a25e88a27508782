"""
The agents of one worker: their definitions, which of them can take runs and
why not, and the native Hermes profile each is rendered into.

Each agent is one Hermes profile under ``<instance root>/profiles/<agent>``.
Profile files are rewritten from inventory at every start, so inventory stays
authoritative; the provider keys a profile needs stay in this catalog's
memory and are handed to Hermes through its secret scope, never written.
"""

import os
from pathlib import Path
from typing import Any, Dict, List, Optional

import yaml

from ..errors import AgentUnavailable
from ..models import AgentDefinition, HermesInventory
from . import profiles
from .hermes import profile_store
from .hermes.plugin import NORFAB_TOOLSET

MIN_SECRET_CHARS = 6  # shorter values would mask ordinary words


class AgentCatalog:
    """
    Agent definitions by name and the errors of those that cannot run.

    Args:
        worker_name: for messages.
        root: the instance root.
        inventory: the worker's validated inventory.
        agents: valid definitions by agent name.
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
        self.warnings: List[str] = []  # problems that do not stop an agent
        self._secrets: Dict[Path, Dict[str, str]] = {}  # profile home -> its provider keys

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

    def sync_profiles(self) -> None:
        """Render every agent's profile; stop serving profiles that left inventory (their state is kept)."""
        for name, definition in list(self.agents.items()):
            home = profile_store.ensure_profile(name)
            try:
                config, secrets = profiles.profile_config(
                    name,
                    definition,
                    self.inventory.model,
                    self.max_turns(definition),
                    os.environ,
                    profile_store.provider_key_vars,
                )
            except ValueError as error:
                self.errors[name] = f"agent '{name}': {error}"
                del self.agents[name]
                profiles.disable_profile(home)
                continue
            profiles.write_profile(home, config, definition.instructions)
            self._secrets[home.resolve()] = secrets
        for name in profiles.served_profiles(self.root):
            if name not in self.agents:
                profiles.disable_profile(self.root / "profiles" / name)
        for name, definition in self.agents.items():
            if definition.tools and NORFAB_TOOLSET not in definition.toolsets:
                self.warnings.append(
                    f"agent '{name}' defines tools but its toolsets do not list '{NORFAB_TOOLSET}': "
                    "the tools are not offered"
                )

    def secrets_for(self, home: Path) -> Dict[str, str]:
        """The provider keys of the profile at ``home`` (Hermes' secret scope)."""
        return self._secrets.get(Path(home).resolve(), {})

    def secrets(self) -> List[str]:
        """Secret values to mask, longest first so no shorter one splits a longer."""
        values = {value for keys in self._secrets.values() for value in keys.values() if len(value) >= MIN_SECRET_CHARS}
        return sorted(values, key=len, reverse=True)

    def require(self, agent: str) -> AgentDefinition:
        """The definition of an agent that can take runs; AgentUnavailable says why not."""
        if agent in self.errors:
            raise AgentUnavailable(f"agent '{agent}' on worker '{self.worker_name}' is unavailable: {self.errors[agent]}")
        if agent not in self.agents:
            known = ", ".join(sorted(self.available())) or "none"
            raise AgentUnavailable(f"agent '{agent}' not found on worker '{self.worker_name}'; known agents: {known}")
        return self.agents[agent]

    def available(self) -> List[str]:
        return [name for name in self.agents if name not in self.errors]

    def availability(self) -> Dict[str, bool]:
        """Every agent of the inventory, valid or not, and whether it can take runs."""
        return {name: name in self.agents and name not in self.errors for name in sorted({*self.agents, *self.errors})}

    def effective_config(self, agent: str) -> Dict[str, Any]:
        """The config.yaml Hermes reads for the agent's profile."""
        path = self.root / "profiles" / agent / "config.yaml"
        return (yaml.safe_load(path.read_text()) or {}) if path.exists() else {}
