"""
Nonces of the operators' proofs a worker accepted, kept until the proof
expires, so that a proof is never taken twice: not after the worker restarts
and, with the fleet's record (PostgreSQL), not by another worker of the
fleet as a job of its own. One NorFab job sent to several workers carries one
proof: each worker it names takes it once, for that job only. The table is
migration 0005's (``migrations/0005_proof_nonces.sql``).
"""

from typing import Optional

from ...identity.gate import REPLAYED
from .statements import Connection


def first_use(db: Connection, nonce: str, worker: str, job: str, expires: float) -> Optional[str]:
    """Take ``nonce`` for ``worker``'s ``job``; why it may not be taken (seen before, or by another job), or None."""
    taken = db.execute(
        "INSERT INTO proof_nonces (nonce, worker, job, expires) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
        (nonce, worker, job, expires),
    ).rowcount
    if not taken:
        return REPLAYED
    other = db.execute(
        "SELECT worker FROM proof_nonces WHERE nonce = ? AND job <> ? ORDER BY worker", (nonce, job)
    ).fetchone()
    if other is not None:
        return f"proof: it was used already by worker '{other[0]}' for another job (replayed); sign each request anew"
    return None


def prune(db: Connection, now: float) -> int:
    """Forget the nonces of expired proofs: an expired proof is refused on its expiry alone."""
    return db.execute("DELETE FROM proof_nonces WHERE expires <= ?", (now,)).rowcount
