"""
The worker's records database: one SQLite file under the instance root, in
WAL mode, one connection behind one lock. Every write is a short
transaction, so a reader (get_runs, an export) never waits long and a
``kill -9`` loses nothing that was committed.
"""

import contextlib
import sqlite3
import threading
import time
from pathlib import Path
from typing import Callable, Iterator, Optional, Sequence, Tuple

from . import audit

RECORDS_FILE = "norfab_records.db"
COMPACT_PAGES = 500  # pages (4 KiB) given back per step of ``compact``
COMPACT_PAUSE = 0.005  # seconds between those steps: runs being recorded take the lock meanwhile
AUTO_CHECKPOINT = 1000  # WAL pages after which a commit checkpoints (SQLite's default), but while ``deleting``
SCHEMA_VERSION = 2  # in the file's user_version; 2: runs carry their case and provenance


class Database:
    """
    One SQLite database shared by the worker's threads (the embedded backend; ``pg.PgDatabase`` is the fleet's).

    Args:
        path: the database file (created with its folder).
        schemas: the ``CREATE ... IF NOT EXISTS`` scripts of its tables.
        upgrades: run after them, on new and old files alike: what later versions added.
    """

    def __init__(
        self, path: Path, schemas: Sequence[str], upgrades: Sequence[Callable[[sqlite3.Connection], None]] = ()
    ) -> None:
        self.path = Path(path)
        self.shared = False  # this worker's own
        self.record_id: Optional[str] = None
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # autocommit: transactions are explicit, BEGIN IMMEDIATE takes the write lock at once
        self._db = sqlite3.connect(str(self.path), check_same_thread=False, isolation_level=None)
        self._db.row_factory = sqlite3.Row
        self._lock = threading.RLock()
        self._aside: Optional[sqlite3.Connection] = None  # checkpoints while ``deleting``
        self._deleter: Optional[int] = None  # the thread ``deleting``
        with self._lock:
            self._db.execute("PRAGMA auto_vacuum=INCREMENTAL")  # takes effect on a new file only
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")  # WAL: a crash of the process loses no commit
            self._db.execute("PRAGMA busy_timeout=5000")  # an operator's sqlite3 reading the file meanwhile
            for schema in schemas:
                self._db.executescript(schema)
            for upgrade in upgrades:
                upgrade(self._db)
            self._db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction: committed when the block ends, rolled back if it raises (every commit is
        kept through a crash of the worker: WAL mode)."""
        with self._lock:
            self._start_over()
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    @contextlib.contextmanager
    def reading(self) -> Iterator[sqlite3.Connection]:
        """Reads of one consistent moment: no write of this worker comes in between."""
        with self._lock:
            yield self._db

    def chain_head(self, db: sqlite3.Connection) -> Tuple[int, str]:
        """Where the audit chain ends (writers take turns already: BEGIN IMMEDIATE holds the file's write lock)."""
        return audit.head(db)

    def move_head(self, db: sqlite3.Connection, before: Tuple[int, str], after: Tuple[int, str]) -> None:
        audit.set_anchor(db, "head", *after)

    @contextlib.contextmanager
    def deleting(self) -> Iterator[None]:
        """A long deletion in many transactions (retention): meanwhile a commit leaves the WAL's checkpoint
        (copying its pages into the file and syncing it: seconds on a busy disk) to ``checkpoint``, on a
        connection of its own, so that no run's write waits for a sync while holding the lock (the
        deletion's own writes wait for the few pages since, ``_start_over``)."""
        aside = sqlite3.connect(str(self.path), check_same_thread=False, isolation_level=None)
        with self._lock:
            self._db.execute("PRAGMA wal_autocheckpoint=0")
            self._aside, self._deleter = aside, threading.get_ident()
        try:
            yield
        finally:
            with self._lock:
                self._aside = self._deleter = None
                self._db.execute(f"PRAGMA wal_autocheckpoint={AUTO_CHECKPOINT}")
            aside.close()

    def _start_over(self) -> None:
        """Holding the lock, a write of ``deleting``'s own first checkpoints the pages committed since its
        last ``checkpoint`` (few), so that the checkpoint is whole and the write starts the WAL over. (Beside
        writers that never pause, a WAL never once wholly checkpointed keeps every page the deletion writes:
        gigabytes, and seconds to cut back.)"""
        if self._aside is not None and threading.get_ident() == self._deleter:
            self._aside.execute("PRAGMA wal_checkpoint(PASSIVE)")

    def checkpoint(self) -> None:
        """Within ``deleting``: the WAL's committed pages into the file, beside the writers (they go on)."""
        aside = self._aside
        if aside is not None:
            aside.execute("PRAGMA wal_checkpoint(PASSIVE)")

    def compact(self) -> None:
        """Give the pages of deleted rows back to the file system, COMPACT_PAGES at a time: a write waits for
        one step at most (sqlite3's ``execute`` steps the pragma once, freeing one page: a script runs it whole)."""
        before = None
        while True:
            with self._lock:
                free = self._db.execute("PRAGMA freelist_count").fetchone()[0]
                if not free or free == before:  # all given back, or a file made without auto_vacuum: none can be
                    break
                self._start_over()
                self._db.executescript(f"PRAGMA incremental_vacuum({COMPACT_PAGES});")
            before = free
            self.checkpoint()
            time.sleep(COMPACT_PAUSE)
        self.checkpoint()  # what is left for the lock's holder to sync is little, and the WAL is short
        with self._lock:
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def close(self) -> None:
        with self._lock:
            self._db.close()
