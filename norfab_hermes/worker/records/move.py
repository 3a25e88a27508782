"""
Move a worker's SQLite record into the fleet's PostgreSQL record:

    python -m norfab_hermes.worker.records.move PATH/norfab_records.db --dsn-env NORFAB_HERMES_PG_DSN

Run it with the worker stopped, before it starts with ``records.backend:
postgresql``. Every run (with its state for get_run), approval and the daily
usage move; the audit log moves entry by entry with its hashes and anchors,
so ``verify_audit`` checks it after the move as before. One transaction: a
move that fails leaves the database as it was. A run already in the database
(a move repeated) is kept as it is.

The fleet has one audit chain: a second worker's log cannot join a chain
that already has entries without rewriting its hashes. Move the first
worker's record whole; for the others, export the log and keep its head
(``nf# hermes audit export`` and ``verify``), then move with
``--without-audit``.
"""

import argparse
import os
import sqlite3
import sys
from pathlib import Path
from typing import Any, List, Optional

from ...errors import HermesError
from . import audit
from .pg import PgDatabase

# table: the column its rows are known by (a repeated move keeps what is there)
TABLES = {"runs": "run_id", "run_details": "run_id", "approvals": "approval_id"}
USAGE_ADD = (
    "INSERT INTO usage (agent, day, tokens, cost_usd) VALUES (?, ?, ?, ?) ON CONFLICT (agent, day) DO UPDATE "
    "SET tokens = usage.tokens + excluded.tokens, cost_usd = usage.cost_usd + excluded.cost_usd"
)


def copy_table(source: sqlite3.Connection, target: Any, table: str, key: str) -> int:
    """Copy every row of ``table`` (the columns both sides have); how many were new."""
    theirs = [row[1] for row in source.execute(f"PRAGMA table_info({table})")]
    found = target.execute("SELECT column_name FROM information_schema.columns WHERE table_name = ?", [table])
    ours = {row["column_name"] for row in found}
    columns = [c for c in theirs if c in ours]
    insert = (
        f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))}) "
        f"ON CONFLICT ({key}) DO NOTHING"
    )
    moved = 0
    for row in source.execute(f"SELECT {', '.join(columns)} FROM {table}"):
        moved += target.execute(insert, list(row)).rowcount
    return moved


def move(path: Path, db: PgDatabase, with_audit: bool = True) -> str:
    """Move the SQLite record at ``path`` into ``db``; what moved, in one line."""
    if not path.is_file():
        raise HermesError(f"no SQLite record at {path}: give the worker's norfab_records.db (under its hermes_home)")
    source = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        with db.transaction() as target:
            if with_audit:
                db.serialize(target, "audit")
                if target.execute("SELECT count(*) FROM audit").fetchone()[0]:
                    raise HermesError(
                        "the shared record's audit chain already has entries: another worker's log cannot join it "
                        "without rewriting its hashes; export this worker's log and keep its head, then move again "
                        "with --without-audit"
                    )
            counts = {table: copy_table(source, target, table, key) for table, key in TABLES.items()}
            for row in source.execute("SELECT agent, day, tokens, cost_usd FROM usage"):
                target.execute(USAGE_ADD, list(row))
            if with_audit:
                counts["audit entries"] = copy_table(source, target, "audit", "seq")
                target.execute("DELETE FROM audit_anchor")  # an empty chain's: the moved log's own replace them
                copy_table(source, target, "audit_anchor", "name")
                audit.set_anchor(target, "head", *audit.head(target))  # a log an older worker wrote may lack one
                verified = audit.verify(target, "moved")  # before the commit: a chain that fails is not moved
                if not verified.ok:
                    raise HermesError(f"the moved audit chain does not verify: {'; '.join(verified.problems)}")
        return "moved " + ", ".join(f"{count} {table}" for table, count in counts.items())
    finally:
        source.close()


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m norfab_hermes.worker.records.move",
        description="Move a hermes worker's SQLite record into the fleet's PostgreSQL record",
    )
    parser.add_argument("path", type=Path, help="the worker's norfab_records.db")
    parser.add_argument(
        "--dsn-env", default="NORFAB_HERMES_PG_DSN", help="environment variable holding the connection string"
    )
    parser.add_argument("--without-audit", action="store_true", help="move runs, approvals and usage only")
    args = parser.parse_args(argv)
    dsn = os.environ.get(args.dsn_env)
    if not dsn:
        print(
            f"--dsn-env: environment variable {args.dsn_env} is not set; set it to the connection string",
            file=sys.stderr,
        )
        return 2
    try:
        db = PgDatabase(dsn, f"${args.dsn_env}")
        try:
            print(move(args.path, db, with_audit=not args.without_audit))
        finally:
            db.close()
    except HermesError as error:
        print(f"nothing moved: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
