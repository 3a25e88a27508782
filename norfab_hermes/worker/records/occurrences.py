"""
Occurrences of grouped schedules: the first member of a group to claim a due
occurrence runs it, every other member records where it ran. With the
fleet's record (PostgreSQL) the claim holds across the group's workers; with
a worker's own SQLite file it holds only on that worker.
"""

import time

from .statements import Connection


def claim(db: Connection, group: str, agent: str, name: str, due: str, worker: str) -> str:
    """Claim the occurrence for ``worker``; the worker that holds it (``worker`` when it came first)."""
    key = (group, agent, name, due)
    db.execute(
        "INSERT INTO schedule_occurrences (grp, agent, name, due, worker, claimed) VALUES (?, ?, ?, ?, ?, ?) "
        "ON CONFLICT DO NOTHING",
        (*key, worker, time.time()),
    )
    found = db.execute(
        "SELECT worker FROM schedule_occurrences WHERE grp = ? AND agent = ? AND name = ? AND due = ?", key
    ).fetchone()
    claimed: str = found[0]
    return claimed


def prune(db: Connection, cutoff: float) -> int:
    return db.execute("DELETE FROM schedule_occurrences WHERE claimed < ?", (cutoff,)).rowcount
