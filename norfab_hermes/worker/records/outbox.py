"""
Records a worker keeps on its own disk while the fleet's record (PostgreSQL)
does not answer, written there in order once it does.

A write that finds the database unreachable goes into the outbox, a SQLite
file under the worker's instance root (``records_outbox.db``: WAL, so a
worker killed loses nothing of it), and so does every write after it until
the outbox is empty again: the record's order is the order of the writes. A
thread tries the database every ``RETRY`` seconds and moves the writes over
one by one, oldest first; each is marked in the database, in its own
transaction, by the outbox's id and its number (``buffered_writes``), so a
worker killed between the database's commit and the outbox's delete does not
write it twice when it starts again.
"""

import json
import logging
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

from ...errors import RecordsUnavailable
from .db import Database

log = logging.getLogger(__name__)

OUTBOX_FILE = "records_outbox.db"
RETRY = 1.0  # seconds between tries of an unreachable database
SCHEMA = """
CREATE TABLE IF NOT EXISTS outbox (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL,      -- the Records write: run_started, tool_call, run_ended, ...
    payload TEXT NOT NULL,   -- its arguments, as JSON
    durable INTEGER NOT NULL,
    queued REAL NOT NULL
);
-- a kept write the database refused (a fault of this worker's, never an outage): set aside, logged
CREATE TABLE IF NOT EXISTS outbox_refused (
    seq INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    payload TEXT NOT NULL,
    error TEXT NOT NULL,
    refused REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS outbox_meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT OR IGNORE INTO outbox_meta (name, value) VALUES ('outbox_id', lower(hex(randomblob(16))));
"""
MARK = "INSERT INTO buffered_writes (outbox, seq, worker, applied) VALUES (?, ?, ?, ?) ON CONFLICT (outbox, seq) DO NOTHING"


class AlreadyWritten(Exception):
    """This outbox write reached the database before (the worker stopped before it was deleted here)."""


# write(name, payload, durable, mark): the Records write ``name`` of ``payload`` in one transaction, where
# ``mark(db)`` runs first and raises AlreadyWritten for a write the database has
Write = Callable[[str, Dict[str, Any], bool, Callable[[Any], None]], None]


class Outbox:
    """
    The writes waiting for the fleet's record.

    Args:
        root: the worker's instance root (the file lives there).
        worker: the worker's name, in messages and marks.
        source: where the DSN came from, for messages (e.g. ``$NORFAB_HERMES_PG_DSN``).
        write: replays one waiting write into the database.
        reachable: whether the database answers now (tried before a flush takes the write order).
        order: the lock every write of the worker takes, so none comes between the outbox and the database.
    """

    def __init__(
        self,
        root: Path,
        worker: str,
        source: str,
        write: Write,
        reachable: Callable[[], bool],
        order: threading.RLock,
    ) -> None:
        self.worker, self.source = worker, source
        self.file = Database(Path(root) / OUTBOX_FILE, [SCHEMA])
        with self.file.reading() as db:
            self.outbox_id = db.execute("SELECT value FROM outbox_meta WHERE name = 'outbox_id'").fetchone()[0]
        self._write, self._reachable, self._order = write, reachable, order
        self._stopped = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._count = self._waiting_count()
        if self._count:  # left by the worker's last life: moved over before the worker settles its runs
            log.warning(f"{worker} - {self._count} records wait in {self.file.path} for the records database")
            if not self.flush():
                self._start()

    def _waiting_count(self) -> int:
        with self.file.reading() as db:
            return db.execute("SELECT count(*) FROM outbox").fetchone()[0]

    @property
    def waiting(self) -> int:
        """How many writes wait (0: the database has them all)."""
        return self._count

    def put(self, name: str, payload: Dict[str, Any], durable: bool, error: Optional[Exception] = None) -> None:
        """Keep one write for later (the caller holds the write order)."""
        with self.file.transaction() as db:
            db.execute(
                "INSERT INTO outbox (name, payload, durable, queued) VALUES (?, ?, ?, ?)",
                (name, json.dumps(payload, default=str), int(durable), time.time()),
            )
        self._count += 1
        if error is not None:
            log.warning(
                f"{self.worker} - Records database {self.source} unreachable ({error}): records of read-only runs "
                f"are kept in {self.file.path} until it answers; runs that need it are refused"
            )
        self._start()

    def _start(self) -> None:
        """The flushing thread, unless it runs (the caller holds the write order, as the thread does to stop)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._flushing, name=f"{self.worker}-records-outbox", daemon=True)
            self._thread.start()

    def _flushing(self) -> None:
        while not self._stopped.is_set():
            with self._order:
                if not self._count:  # a write kept from now on starts another thread
                    self._thread = None
                    return
            if not self._reachable() or not self.flush():
                self._stopped.wait(RETRY)

    def flush(self) -> bool:
        """Move the waiting writes into the database, oldest first; whether it took them all."""
        moved = 0
        while self._count and not self._stopped.is_set():
            with self._order:
                first = self._first()
                if first is None:
                    self._count = 0
                    break
                seq, name, payload, durable = first
                try:
                    self._write(name, json.loads(payload), bool(durable), self._marker(seq))
                except AlreadyWritten:
                    pass
                except RecordsUnavailable as error:
                    log.info(f"{self.worker} - Records database {self.source} still unreachable: {error}")
                    return False
                except Exception as error:  # not an outage: kept aside, so the writes after it still go
                    log.exception(f"{self.worker} - Records database {self.source} refused kept write {seq} ({name})")
                    with self.file.transaction() as db:
                        db.execute(
                            "INSERT INTO outbox_refused (seq, name, payload, error, refused) VALUES (?, ?, ?, ?, ?)",
                            (seq, name, payload, str(error), time.time()),
                        )
                with self.file.transaction() as db:
                    db.execute("DELETE FROM outbox WHERE seq = ?", (seq,))
                self._count = max(self._count - 1, 0)
                moved += 1
        if moved:
            log.info(f"{self.worker} - Moved {moved} kept records into the records database {self.source}")
        return not self._count

    def _first(self) -> Optional[Tuple[int, str, str, int]]:
        with self.file.reading() as db:
            row = db.execute("SELECT seq, name, payload, durable FROM outbox ORDER BY seq LIMIT 1").fetchone()
        return tuple(row) if row else None

    def _marker(self, seq: int) -> Callable[[Any], None]:
        def mark(db: Any) -> None:
            if not db.execute(MARK, [self.outbox_id, seq, self.worker, time.time()]).rowcount:
                raise AlreadyWritten(f"outbox {self.outbox_id} write {seq}")

        return mark

    def pending(self) -> List[str]:
        """The names of the waiting writes, oldest first (for tests and get_status)."""
        with self.file.reading() as db:
            return [row[0] for row in db.execute("SELECT name FROM outbox ORDER BY seq")]

    def close(self) -> None:
        self._stopped.set()
        thread = self._thread
        if thread is not None:
            thread.join(timeout=10)
        self.file.close()
