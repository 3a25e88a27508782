"""
Hermes' own profile store: where profiles live, creating them, and which
environment variables hold a provider's key. Public Hermes APIs only.
"""

from pathlib import Path
from typing import List


def ensure_profile(name: str) -> Path:
    """Create the Hermes profile if missing; existing profile state is kept."""
    from hermes_cli import profiles

    if not profiles.profile_exists(name):
        profiles.create_profile(name, no_alias=True, no_skills=True)
    return Path(profiles.get_profile_dir(name))


def provider_key_vars(provider: str) -> List[str]:
    """The environment variables Hermes reads a provider's API key from (e.g. OPENROUTER_API_KEY)."""
    from hermes_cli.auth import PROVIDER_REGISTRY

    entry = PROVIDER_REGISTRY.get(provider.lower())
    return list(getattr(entry, "api_key_env_vars", ()) or ())
