"""
Which role each hermes task needs, and whether an operator holds it for an
agent. Every role reads (viewer); the others add what they name. A task not
listed here needs admin: a new task is closed until someone says otherwise.
"""

import fnmatch
from typing import Collection, Mapping, Optional

UNSIGNED = frozenset({"get_version"})  # the version check a load balancer or a monitor makes
VIEWER_TASKS = frozenset(
    {
        "get_agents",
        "get_agent",
        "get_sessions",
        "get_session",
        "get_run",
        "get_runs",
        "get_approvals",
        "get_audit",
        "verify_audit",
        "evidence",
        "report",
        "handover",
        "get_status",
        "get_inventory",
    }
)
ROLE_TASKS = {
    "operator": frozenset({"invoke", "start_run", "interrupt", "command"}),
    "approver": frozenset({"approve", "deny", "reset_breaker", "acknowledge_outcome"}),
    "admin": frozenset({"manage_agent", "schedule", "memory", "reload_operators", "notify"}),
}


def role_of(task: str) -> str:
    """The role ``task`` needs."""
    if task in VIEWER_TASKS:
        return "viewer"
    return next((role for role, tasks in ROLE_TASKS.items() if task in tasks), "admin")


def holds(roles: Mapping[str, Collection[str]], role: str, agent: Optional[str]) -> bool:
    """Whether roles by agent pattern grant ``role`` for ``agent`` (for no agent: for some agent)."""
    for pattern, granted in roles.items():
        if role in granted or (role == "viewer" and granted):
            if agent is None or fnmatch.fnmatchcase(agent, pattern):
                return True
    return False
