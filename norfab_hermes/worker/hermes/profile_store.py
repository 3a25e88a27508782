"""
Hermes' own profile store: where profiles live, creating them, and which
environment variables hold a provider's key. Public Hermes APIs only.
"""

import shutil
from pathlib import Path
from typing import List


def ensure_profile(name: str) -> Path:
    """Create the Hermes profile if missing; existing profile state is kept."""
    from hermes_cli import profiles

    if not profiles.profile_exists(name):
        profiles.create_profile(name, no_alias=True, no_skills=True)
    return Path(profiles.get_profile_dir(name))


def clone_profile(name: str, source: str) -> Path:
    """A new profile with the source's configuration, instructions and skills; not its sessions
    or memory (Hermes' clone copies the memory files: they are removed, since what one agent
    learned may not go to another agent's provider)."""
    from hermes_cli import profiles

    home = Path(profiles.create_profile(name, clone_from=source, clone_config=True, no_alias=True))
    memories = home / "memories"
    if memories.exists():
        shutil.rmtree(memories)
    memories.mkdir()
    return home


def delete_profile(name: str) -> Path:
    """Remove the profile directory (skills, memory, cron store); sessions stay in the root's state.db.

    Not Hermes' ``delete_profile``: that one also looks for gateway processes
    and backends bound to the profile to stop them, and in a hermes worker the
    profile's gateway is this process.
    """
    from hermes_cli import profiles

    home = Path(profiles.get_profile_dir(name))
    shutil.rmtree(home)
    return home


def provider_key_vars(provider: str) -> List[str]:
    """The environment variables Hermes reads a provider's API key from (e.g. OPENROUTER_API_KEY)."""
    from hermes_cli.auth import PROVIDER_REGISTRY

    entry = PROVIDER_REGISTRY.get(provider.lower())
    return list(getattr(entry, "api_key_env_vars", ()) or ())
