"""
The audit log: an append-only list of what happened on the worker (runs
started and ended, tool calls, approvals and decisions, agent lifecycle and
schedule changes), each entry chained to the one before by a sha256 hash.

Editing an entry breaks its own hash; deleting one leaves a gap in the
sequence and breaks the next entry's link; cutting the tail disagrees with
the head kept beside the log. Whoever can write the file can also rewrite
the whole chain: keep the head that ``verify`` reports (or exports) off the
host to prove the log later. Pruning old entries keeps the hash of the last
pruned one, so the chain still starts from a known link.
"""

import json
from typing import Any, Dict, Iterator, List, Optional, Tuple

from ...identity.audit import canonical, entry_hash, entry_problems
from ...models import AuditEntry, AuditPage, AuditVerifyData, now_iso
from .statements import Connection, Row

GENESIS = "0" * 64  # the link before the first entry
PROBLEMS_SHOWN = 100
VERIFY_BATCH = 5000

COLUMNS = "seq, time, worker, kind, agent, run_id, actor, data, prev, hash"


def anchor(db: Connection, name: str) -> Tuple[int, str]:
    row = db.execute("SELECT seq, hash FROM audit_anchor WHERE name = ?", (name,)).fetchone()
    return (row["seq"], row["hash"]) if row else (0, GENESIS)


def set_anchor(db: Connection, name: str, seq: int, hash_: str) -> None:
    db.execute(
        "INSERT INTO audit_anchor (name, seq, hash) VALUES (?, ?, ?) "
        "ON CONFLICT (name) DO UPDATE SET seq = excluded.seq, hash = excluded.hash",
        (name, seq, hash_),
    )


class ChainMoved(Exception):
    """Another worker appended to the shared chain since this one last did: write again after the new head."""


def head(db: Connection) -> Tuple[int, str]:
    """Where the chain ends (sequence number, hash): its head anchor, else its last entry, else the last
    pruned link (a log whose head anchor is missing continues from its last entry)."""
    seq, prev = anchor(db, "head")
    if seq == 0:
        last = db.execute("SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1").fetchone()
        seq, prev = (last["seq"], last["hash"]) if last else anchor(db, "pruned")
    return seq, prev


def entry(
    after: Tuple[int, str],
    worker: str,
    kind: str,
    agent: Optional[str] = None,
    run_id: Optional[str] = None,
    actor: Optional[str] = None,
    data: Optional[Dict[str, Any]] = None,
    at: Optional[str] = None,
) -> Tuple[Any, ...]:
    """The row of the entry after the chain's head ``after`` (its columns, in ``COLUMNS``' order), made
    ``at`` (ISO time; default: now)."""
    seq, prev = after
    seq += 1
    # a detail without a value is left out (it reads as None all the same): a smaller log
    time, text = at or now_iso(), canonical({key: value for key, value in (data or {}).items() if value is not None})
    digest = entry_hash(prev, seq, time, worker, kind, agent, run_id, actor, text)
    return (seq, time, worker, kind, agent, run_id, actor, text, prev, digest)


def insert(db: Connection, row: Tuple[Any, ...]) -> Tuple[int, str]:
    """Write an entry ``entry`` made; the chain's new head (sequence number, hash)."""
    db.execute(f"INSERT INTO audit ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", row)
    return row[0], row[-1]


def append(db: Connection, worker: str, kind: str, *args: Any, **kwargs: Any) -> int:
    """Append one entry after the chain's head inside the caller's transaction; its sequence number."""
    seq, digest = insert(db, entry(head(db), worker, kind, *args, **kwargs))
    set_anchor(db, "head", seq, digest)
    return seq


def _entry(row: Row) -> AuditEntry:
    return AuditEntry(
        seq=row["seq"],
        time=row["time"],
        worker=row["worker"],
        kind=row["kind"],
        agent=row["agent"],
        run_id=row["run_id"],
        actor=row["actor"],
        data=json.loads(row["data"]),
        prev=row["prev"],
        hash=row["hash"],
    )


def page(
    db: Connection,
    after: int,
    limit: int,
    agent: Optional[str] = None,
    run_id: Optional[str] = None,
    kind: Optional[str] = None,
    since: Optional[str] = None,
    until: Optional[str] = None,
    before: Optional[int] = None,
    newest_first: bool = False,
) -> AuditPage:
    """Entries after sequence number ``after`` (and before ``before``), matching the filters: the oldest
    ``limit`` of them, oldest first; or with ``newest_first`` the newest, newest first (the index on
    kind and seq finds a kind's newest without walking the log)."""
    where: List[str] = ["seq > ?"]
    params: List[Any] = [after]
    if before is not None:
        where.append("seq < ?")
        params.append(before)
    for column, value in (("agent", agent), ("run_id", run_id), ("kind", kind)):
        if value is not None:
            where.append(f"{column} = ?")
            params.append(value)
    if since is not None:
        where.append("time >= ?")
        params.append(since)
    if until is not None:
        where.append("time <= ?")
        params.append(until)
    order = "seq DESC" if newest_first else "seq"
    rows = db.execute(
        f"SELECT {COLUMNS} FROM audit WHERE {' AND '.join(where)} ORDER BY {order} LIMIT ?", (*params, limit + 1)
    ).fetchall()
    entries = [_entry(row) for row in rows[:limit]]
    more = len(rows) > limit
    if newest_first:
        return AuditPage(entries=entries, next_before=entries[-1].seq if more else None)
    return AuditPage(entries=entries, next_after=entries[-1].seq if more else None)


def _rows(db: Connection) -> Iterator[Row]:
    after = 0
    while True:
        rows = db.execute(
            f"SELECT {COLUMNS} FROM audit WHERE seq > ? ORDER BY seq LIMIT ?", (after, VERIFY_BATCH)
        ).fetchall()
        yield from rows
        if len(rows) < VERIFY_BATCH:
            return
        after = rows[-1]["seq"]


def verify(db: Connection, worker: str, keys: Optional[Dict[str, str]] = None) -> AuditVerifyData:
    """Check every link and hash of the chain, from the last pruned entry to the head, and every
    operator's signature an entry keeps (against ``keys``, fingerprint to operator, when given)."""
    problems: List[str] = []
    expected, prev = anchor(db, "pruned")
    expected += 1
    first = last = None
    count = 0
    for row in _rows(db):
        seq = row["seq"]
        first = seq if first is None else first
        problems += entry_problems(row, row["data"], expected, prev, keys)
        prev, expected, last, count = row["hash"], seq + 1, seq, count + 1
    head_seq, head_hash = anchor(db, "head")
    if head_seq and (head_seq, head_hash) != (last, prev):
        problems.append(
            f"the log ends at entry {last or 0} but its head is entry {head_seq}: entries at the end were "
            "deleted or changed"
        )
    shown = problems[:PROBLEMS_SHOWN]
    if len(problems) > PROBLEMS_SHOWN:
        shown.append(f"... and {len(problems) - PROBLEMS_SHOWN} more problems")
    return AuditVerifyData(
        worker=worker,
        ok=not problems,
        entries=count,
        first_seq=first,
        last_seq=last,
        head=prev if last else None,
        problems=shown,
    )


def prune_edge(db: Connection, cutoff: str, keep: int) -> int:
    """Entries up to this seq go: those older than ``cutoff`` and those beyond the newest ``keep``."""
    # the newest entry older than cutoff, by its time's index (a worker's clock behind another's: fewer go)
    by_age = db.execute("SELECT seq FROM audit WHERE time < ? ORDER BY time DESC LIMIT 1", (cutoff,)).fetchone()
    by_age = by_age[0] if by_age else 0
    head = db.execute("SELECT max(seq) FROM audit").fetchone()[0] or 0
    return int(max(by_age, head - keep))


def prune(db: Connection, edge: int, batch: int) -> int:
    """Delete the oldest entries, at most ``batch``, of those up to ``edge`` (``prune_edge``), keeping the link;
    how many (a caller loops, one short transaction each)."""
    first = db.execute("SELECT min(seq) FROM audit").fetchone()[0] or 0
    through = min(edge, first + batch - 1)
    row = db.execute("SELECT seq, hash FROM audit WHERE seq <= ? ORDER BY seq DESC LIMIT 1", (through,)).fetchone()
    if row is None:
        return 0
    deleted = db.execute("DELETE FROM audit WHERE seq <= ?", (row["seq"],)).rowcount
    set_anchor(db, "pruned", row["seq"], row["hash"])
    return deleted
