"""
Hermes' toolsets: which names exist and which tools each holds. Public
Hermes APIs only.
"""

from typing import List


def offered_tools(toolsets: List[str]) -> List[str]:
    """The Hermes tools ``toolsets`` hold, bundles expanded (what a profile listing them is offered;
    tools the gateway adds on its own are held back at call time, see ``plugin._guard_tools``)."""
    from toolsets import resolve_multiple_toolsets

    return sorted(resolve_multiple_toolsets(list(toolsets)))


def unknown_toolsets(toolsets: List[str]) -> List[str]:
    """The names in ``toolsets`` that are no Hermes toolset."""
    from toolsets import validate_toolset

    return [name for name in toolsets if not validate_toolset(name)]


def toolset_names() -> List[str]:
    """Every toolset Hermes knows, for messages."""
    from toolsets import get_toolset_names

    return sorted(get_toolset_names())
