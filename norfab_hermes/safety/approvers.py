"""
Who may decide for an agent: its (or its tool's) ``approvers``, NorFab client
names. An empty list lets any client decide. The same rule serves an
approval's decision, a breaker's reset and an unknown outcome's acknowledgement.
"""

from typing import List, Optional


def approver_refusal(approvers: List[str], client: Optional[str], what: str, agent: str) -> Optional[str]:
    """Why ``client`` may not do ``what`` for ``agent``, or None when it may."""
    if not approvers or client in approvers:
        return None
    return (
        f"client '{client}' may not {what}: only {', '.join(approvers)} may (approvers of agent '{agent}'); "
        "the attempt is recorded"
    )
