"""
Approval records: every approval a run asked for, as it stands now
(pending, then approved, denied or expired, with who decided, when and why).
"""

from typing import List, Optional, Tuple

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
            info.model_dump_json(exclude_defaults=True),  # read back whole: a smaller record
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


def prune(db: Connection, after: str, batch: int) -> Tuple[int, Optional[str]]:
    """Of the next ``batch`` approvals by id after ``after``, delete those of runs no longer kept (a run's go
    with it: these were recorded after it went); how many, and the last id looked at (None: no more). A caller
    loops, one short transaction each."""
    ids = [
        row["approval_id"]
        for row in db.execute(
            "SELECT approval_id FROM approvals WHERE approval_id > ? ORDER BY approval_id LIMIT ?", (after, batch)
        )
    ]
    if not ids:
        return 0, None
    gone = db.execute(
        f"DELETE FROM approvals WHERE approval_id IN ({', '.join('?' * len(ids))}) "
        "AND NOT EXISTS (SELECT 1 FROM runs WHERE runs.run_id = approvals.run_id)",
        ids,
    ).rowcount
    return gone, ids[-1]
