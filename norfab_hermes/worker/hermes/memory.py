"""
Hermes' own memory and skills of one profile, for operators: what the agent
saved (``memories/MEMORY.md``, ``USER.md``, ``skills/``), read and forgotten
through Hermes' memory store and skills tools inside the profile's scope,
so their formats and checks stay Hermes'.
"""

import json
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from . import compat

TARGETS = ("memory", "user")


def entries(home: Path) -> Tuple[List[str], List[str]]:
    """The profile's memory entries and user-profile entries, as saved."""
    from tools.memory_tool import load_on_disk_store

    with compat.profile_scope(home):
        store = load_on_disk_store()
        return list(store.memory_entries), list(store.user_entries)


def forget(home: Path, target: str, entry: Optional[str]) -> List[str]:
    """Remove the one entry holding ``entry`` (every entry when None); the entries removed.

    LookupError when ``entry`` matches no entry or several.
    """
    from tools.memory_tool import load_on_disk_store

    with compat.profile_scope(home):
        store = load_on_disk_store()
        current = store.memory_entries if target == "memory" else store.user_entries
        chosen = [e for e in current if entry in e] if entry else list(current)
        if entry and len(chosen) != 1:
            raise LookupError(f"'{entry}' is in {len(chosen)} {target} entries; give a part of exactly one")
        for text in chosen:
            outcome = store.remove(target, text)
            if not outcome.get("success"):
                raise LookupError(str(outcome.get("error") or "Hermes refused to remove the entry"))
        return chosen


def skills(home: Path) -> List[Dict[str, Any]]:
    """The skills of the profile: name, description, category."""
    from tools.skills_tool import skills_list

    with compat.profile_scope(home):
        listed = json.loads(skills_list())
    return [s for s in listed.get("skills") or [] if isinstance(s, dict) and s.get("name")]


def delete_skill(home: Path, name: str) -> None:
    """Delete one skill of the profile; LookupError says why not."""
    from tools.skill_manager_tool import skill_manage

    with compat.profile_scope(home):
        outcome = json.loads(skill_manage(action="delete", name=name, absorbed_into=""))
    if not outcome.get("success"):
        raise LookupError(str(outcome.get("error") or f"skill '{name}' could not be deleted"))
