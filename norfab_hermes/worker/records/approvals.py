"""
Approval records: every approval a run asked for, as it stands now
(pending, then approved, denied or expired, with who decided, when and why).
"""

from typing import List, Optional

from ...models import ApprovalInfo
from .statements import Connection


def save(db: Connection, info: ApprovalInfo) -> None:
    db.execute(
        "INSERT INTO approvals (approval_id, run_id, agent, state, requested, decided_by, info) "
        "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (approval_id) DO UPDATE SET "
        "state = excluded.state, decided_by = excluded.decided_by, info = excluded.info",
        (
            info.approval_id,
            info.run_id,
            info.agent,
            info.state,
            info.requested,
            info.decided_by,
            info.model_dump_json(),
        ),
    )


def get(db: Connection, approval_id: str) -> Optional[ApprovalInfo]:
    row = db.execute("SELECT info FROM approvals WHERE approval_id = ?", (approval_id,)).fetchone()
    return ApprovalInfo.model_validate_json(row["info"]) if row else None


def of_run(db: Connection, run_id: str) -> List[ApprovalInfo]:
    rows = db.execute("SELECT info FROM approvals WHERE run_id = ? ORDER BY requested", (run_id,)).fetchall()
    return [ApprovalInfo.model_validate_json(row["info"]) for row in rows]


def pending(db: Connection, worker: str) -> List[ApprovalInfo]:
    """The pending approvals of ``worker``'s runs."""
    rows = db.execute(
        "SELECT info FROM approvals WHERE state = 'pending' AND run_id IN (SELECT run_id FROM runs WHERE worker = ?) "
        "ORDER BY requested",
        (worker,),
    ).fetchall()
    return [ApprovalInfo.model_validate_json(row["info"]) for row in rows]


def prune(db: Connection) -> int:
    """Delete the approvals of runs no longer kept."""
    return db.execute("DELETE FROM approvals WHERE run_id NOT IN (SELECT run_id FROM runs)").rowcount
