"""
Native Hermes profiles rendered from agent definitions.

Each agent is one Hermes profile under ``<instance root>/profiles/<agent>``.
For agents it defines (inventory and runtime agents) the worker owns three
files of the profile - ``config.yaml``, ``SOUL.md`` and an empty ``.env``
(provider keys stay in the worker's memory) - and rewrites them at every
start, so the definition stays authoritative; ``norfab.yaml`` records who
owns the profile (and a runtime agent's definition). A profile an operator
made with Hermes itself has no such file: it is served as it is, with only
what serving through NorFab needs added. Everything else in a profile
(sessions, memories, skills, cron jobs) is Hermes runtime state and is
never touched.
"""

import copy
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

import yaml

from ...models import AgentDefinition
from ..files import write_config, write_file
from ..hermes.compat import PLATFORM
from ..hermes.plugin import NORFAB_TOOLSET, PLUGIN, agent_toolset

STREAM_INTERVAL = 0.25  # seconds between streamed reply updates of one run
HOME_CHANNEL = {"platform": PLATFORM, "chat_id": "norfab-home", "name": "NorFab home"}

# Settings every profile gets and the inventory cannot change: no tool
# security downloads, no kanban dispatcher, no environment probe, no
# confirmation round-trips for /new, and no progress chatter in replies
# (NorFab job events carry progress instead).
ENFORCED = {
    "security": {"tirith_enabled": False},
    # a NorFab job is answered once, by the run: no ledger to re-deliver chat
    # messages after a crash, no legacy sessions.json next to state.db
    "gateway": {"delivery_ledger": False, "write_sessions_json": False},
    "kanban": {"dispatch_in_gateway": False},
    "approvals": {"destructive_slash_confirm": False},
    "onboarding": {"profile_build": "off"},
    "agent": {"environment_probe": False},
    # a request no run's budget counts: every model call is made inside a run
    "auxiliary": {"title_generation": {"enabled": False}},
    "display": {
        "platforms": {
            PLATFORM: {
                "tool_progress": "off",
                "long_running_notifications": "off",
                "show_reasoning": False,
            }
        }
    },
}


# Hermes' memory is off for an agent unless its definition turns it on (memory: true)
MEMORY_OFF = {"memory_enabled": False, "user_profile_enabled": False}
MEMORY_ON = {"memory_enabled": True, "user_profile_enabled": True}
# No background memory or skill review: Hermes would ask the model after the run
# has ended, a request no run's budget counts (the metering refuses it). The
# agent saves what it learns with its memory and skill tools, inside the run.
NO_BACKGROUND_REVIEW = {"memory": {"nudge_interval": 0}, "skills": {"creation_nudge_interval": 0}}
# the toolsets a definition's switches turn on
SWITCHED_TOOLSETS = {"memory": "memory", "skills": "skills"}


def merge(base: Dict[str, Any], over: Dict[str, Any]) -> Dict[str, Any]:
    """Deep merge: mappings merge key by key, anything else in ``over`` wins."""
    out = copy.deepcopy(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def root_config(max_turns: int) -> Dict[str, Any]:
    """The instance root's config: the multiplexing gateway itself.

    ``agent.max_turns`` here is the gateway-wide iteration ceiling (Hermes
    reads it from the process home only); each agent's own, lower budget is
    enforced by the host.
    """
    return merge(
        ENFORCED,
        {
            "gateway": {"multiplex_profiles": True},
            # replies stream to the adapter as one message edited with the text so far,
            # at most every STREAM_INTERVAL seconds (each edit is one job event)
            "streaming": {
                "enabled": True,
                "transport": "edit",
                "edit_interval": STREAM_INTERVAL,
                "buffer_threshold": 10**9,  # edits by time only
                "cursor": "",
            },
            "plugins": {"enabled": [PLUGIN]},
            "agent": {"max_turns": max_turns},
            "platforms": {PLATFORM: {"enabled": False}},
        },
    )


def provider_secrets(
    model: Dict[str, Any], environ: Dict[str, str], key_vars: Callable[[str], List[str]]
) -> Tuple[Dict[str, Any], Dict[str, str]]:
    """Split a model section into config and the secrets it names.

    ``api_key_env: NAME`` becomes a named provider entry whose ``key_env``
    Hermes resolves in the profile's secret scope; the value is read from the
    worker's environment now and kept in memory (never written). Without it, the
    provider's standard variables (e.g. OPENROUTER_API_KEY) are copied when
    the worker has them.
    """
    model = dict(model)
    env_name = model.pop("api_key_env", None)
    secrets: Dict[str, str] = {}
    extra: Dict[str, Any] = {"model": model}
    if env_name:
        if env_name not in environ:
            raise ValueError(f"model.api_key_env names '{env_name}', which is not set in the worker's environment")
        secrets[env_name] = environ[env_name]
        if model.get("base_url"):
            provider = model.get("provider") or "custom"
            extra["providers"] = {provider: {"base_url": model["base_url"], "key_env": env_name}}
    for name in key_vars(model.get("provider") or ""):
        if name in environ:
            secrets.setdefault(name, environ[name])
    return extra, secrets


def profile_config(
    agent: str,
    definition: AgentDefinition,
    model_defaults: Dict[str, Any],
    max_turns: int,
    environ: Dict[str, str],
    key_vars: Callable[[str], List[str]],
) -> Tuple[Dict[str, Any], Dict[str, str]]:
    """The profile's config.yaml content and the provider secrets it needs (kept in memory)."""
    hermes = copy.deepcopy(definition.hermes)
    model = merge(model_defaults, hermes.pop("model", {}))
    model_part, secrets = provider_secrets(model, environ, key_vars)
    memory = MEMORY_ON if definition.memory else MEMORY_OFF
    config = merge({"agent": {"max_turns": max_turns}, "memory": memory}, hermes)
    config = merge(config, model_part)
    config = merge(merge(config, ENFORCED), NO_BACKGROUND_REVIEW)
    toolsets = [agent_toolset(agent) if t == NORFAB_TOOLSET else t for t in toolsets_of(definition)]
    config["platform_toolsets"] = {PLATFORM: toolsets}
    config["platforms"] = {PLATFORM: {"enabled": True, "home_channel": HOME_CHANNEL}}
    return config, secrets


def toolsets_of(definition: AgentDefinition) -> List[str]:
    """The definition's toolsets, with those its memory and skills switches turn on."""
    switched = [t for field, t in SWITCHED_TOOLSETS.items() if getattr(definition, field)]
    return list(definition.toolsets) + [t for t in switched if t not in definition.toolsets]


# recalled facts are a lead, never evidence: the network may have changed since they were saved
MEMORY_NOTE = (
    "What you recall from earlier sessions (memory) may be out of date: treat it as a lead, never as the "
    "network's state now. Re-check every recalled fact against current device output before you rely on it."
)


def soul(definition: AgentDefinition) -> str:
    """The agent's instructions as its profile's SOUL.md holds them."""
    return definition.instructions.rstrip() + (f"\n\n{MEMORY_NOTE}" if definition.memory else "")


def write_profile(home: Path, config: Dict[str, Any], instructions: str) -> None:
    """The profile files the worker owns; its ``.env`` stays empty (keys stay in worker memory)."""
    write_config(home / "config.yaml", config)
    write_file(home / "SOUL.md", instructions.rstrip() + "\n")
    write_file(home / ".env", "")


MARKER = "norfab.yaml"  # owner (inventory or runtime), a runtime agent's definition, whether it is stopped
OWNED_FILES = ("config.yaml", "SOUL.md", MARKER)  # what the worker writes in a profile it renders


def read_marker(home: Path) -> Dict[str, Any]:
    """The profile's ownership record; empty for a profile made with Hermes itself."""
    path = home / MARKER
    return (yaml.safe_load(path.read_text()) or {}) if path.exists() else {}


def write_marker(home: Path, owner: str, definition: Optional[Dict[str, Any]] = None, stopped: bool = False) -> None:
    record: Dict[str, Any] = {"owner": owner, "stopped": stopped}
    if definition is not None:
        record["definition"] = definition
    write_config(home / MARKER, record)


def serve_native(home: Path) -> Dict[str, Any]:
    """Serve a profile made with Hermes itself through NorFab, changing no more than that needs.

    Its own settings stay; the NorFab platform is enabled, the settings every
    hosted profile must have are added, and the platform's tools default to
    none (a profile names the toolsets it wants under
    ``platform_toolsets.norfab``). Returns the config as served.
    """
    path = home / "config.yaml"
    config = (yaml.safe_load(path.read_text()) or {}) if path.exists() else {}
    served = merge(config, ENFORCED)
    served.setdefault("platform_toolsets", {}).setdefault(PLATFORM, [])
    served.setdefault("platforms", {})[PLATFORM] = {"enabled": True, "home_channel": HOME_CHANNEL}
    if served != config:
        write_config(path, served)
    return served


def native_toolsets(home: Path) -> List[str]:
    """The toolsets a native profile lists for the NorFab platform."""
    path = home / "config.yaml"
    config = (yaml.safe_load(path.read_text()) or {}) if path.exists() else {}
    return list(((config.get("platform_toolsets") or {}).get(PLATFORM)) or [])


def disable_profile(home: Path) -> None:
    """Stop serving a profile that left inventory, keeping its state on disk."""
    path = home / "config.yaml"
    config = yaml.safe_load(path.read_text()) if path.exists() else {}
    config = config or {}
    config["platforms"] = {PLATFORM: {"enabled": False}}
    write_config(path, config)


def served_profiles(root: Path) -> List[str]:
    directory = root / "profiles"
    return sorted(p.name for p in directory.iterdir() if p.is_dir()) if directory.exists() else []
