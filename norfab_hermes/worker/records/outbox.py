"""
The writes of a worker on their way into the fleet's record (PostgreSQL).

A run's writes (accepted, running, each tool call, an approval asked and
decided, its end, the audit entries) go first into a SQLite file under the
worker's instance root (``records_outbox.db``, WAL: a worker killed loses
none of it), which costs the run a fraction of a millisecond instead of a
round trip and a WAL flush of the server per write. A thread of the worker
moves what waits into the record at once, oldest first, as many writes as
wait in one transaction (one round trip, one step of the audit chain, one
flush of the server, waited for by the thread, not by the run), so the fleet
sees a run in flight a millisecond or two after each write. A write leaves
the file once its transaction is committed and flushed.

Each transaction carries a mark, the outbox's id and the number of its last
write (``buffered_writes``): a worker killed after the record's commit and
before the file's delete starts again after its last mark, so nothing is
written twice. While the record does not answer the writes wait, in order,
and the thread tries every ``RETRY`` seconds. A write that must be in the
record before its caller goes on (an approval's decision, a run that needs
the record, a dedupe key, the day's usage) and a read of the record move
what waits themselves.
"""

import json
import logging
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Protocol

from ...errors import RecordsUnavailable
from .db import Database

log = logging.getLogger(__name__)

OUTBOX_FILE = "records_outbox.db"
RETRY = 1.0  # seconds between tries of an unreachable database
BATCH = 500  # writes moved in one transaction at most
SCHEMA = """
CREATE TABLE IF NOT EXISTS outbox (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL,      -- the Records write: run_started, tool_call, run_ended, ...
    payload TEXT NOT NULL,   -- its arguments, as JSON
    durable INTEGER NOT NULL, -- 1: its caller waited until it was in the record
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
MARK = "INSERT INTO buffered_writes (outbox, seq, worker, applied) VALUES (?, ?, ?, ?)"


class Record(Protocol):
    """What the outbox asks of the fleet's record (``pg.PgDatabase``)."""

    source: str  # where its DSN came from, for messages

    def reachable(self) -> bool: ...

    def marked(self, outbox: str) -> int: ...


@dataclass(frozen=True)
class Kept:
    """One write in the outbox: its number, the Records write's name and its JSON arguments."""

    seq: int
    name: str
    payload: Dict[str, Any]


# move(writes, mark): the Records writes in one transaction, ``mark(db)`` in it; what each write answered
Move = Callable[[List[Kept], Callable[[Any], None]], List[Any]]


class Outbox:
    """
    The writes of the worker not yet in the fleet's record.

    Args:
        root: the worker's instance root (the file lives there).
        worker: the worker's name, in messages and marks.
        db: the fleet's record.
        move: writes a batch of kept writes into the record.
        order: the lock a move holds, so that no write of the worker comes between the outbox and the record.
    """

    def __init__(self, root: Path, worker: str, db: Record, move: Move, order: threading.RLock) -> None:
        self.worker, self.db, self.source = worker, db, db.source
        self.file = Database(Path(root) / OUTBOX_FILE, [SCHEMA])
        with self.file.reading() as sqlite:
            self.outbox_id = sqlite.execute("SELECT value FROM outbox_meta WHERE name = 'outbox_id'").fetchone()[0]
        self._move, self._order = move, order
        self._counting = threading.Lock()
        self._wake, self._stopped = threading.Event(), threading.Event()
        self._fresh: Dict[int, Kept] = {}  # this life's writes not moved yet, so that none is read back from the file
        self._away: Optional[str] = None  # why the record did not answer, since it did not
        self._moved = db.marked(self.outbox_id)  # the last write in the record: the rest of the file waits
        self._drop_moved()
        with self.file.reading() as sqlite:
            self._count: int = sqlite.execute("SELECT count(*) FROM outbox").fetchone()[0]
        if self._count:  # left by the worker's last life: moved over before the worker settles its runs
            log.warning(f"{worker} - {self._count} records wait in {self.file.path} for the records database")
            try:
                with order:
                    self.catch_up()
            except RecordsUnavailable:
                pass  # logged; the thread tries again
        self._thread = threading.Thread(target=self._moving, name=f"{worker}-records-outbox", daemon=True)
        self._thread.start()

    @property
    def waiting(self) -> int:
        """How many writes are not in the record yet (0: the record has them all)."""
        return self._count

    @property
    def away(self) -> Optional[str]:
        """Why the record did not answer the last move, while it does not."""
        return self._away

    def put(self, name: str, payload: Dict[str, Any], waited: bool = False) -> int:
        """Keep one write (``waited``: its caller moves it at once); its number. The thread moves it."""
        with self.file.transaction() as sqlite:
            seq = sqlite.execute(
                "INSERT INTO outbox (name, payload, durable, queued) VALUES (?, ?, ?, ?)",
                (name, json.dumps(payload, default=str), int(waited), time.time()),
            ).lastrowid
        assert seq is not None  # an INSERT's cursor names its row
        with self._counting:
            self._fresh[seq] = Kept(seq, name, payload)
            self._count += 1
        self._wake.set()
        return seq

    def take_back(self, seq: int) -> bool:
        """Drop a write not moved yet (a run refused); False when it is in the record already (the caller holds
        the write order)."""
        if seq <= self._moved:
            return False
        with self.file.transaction() as sqlite:
            sqlite.execute("DELETE FROM outbox WHERE seq = ?", (seq,))
        with self._counting:
            self._fresh.pop(seq, None)
            self._count -= 1
        return True

    def catch_up(self, through: Optional[int] = None, trying: bool = False) -> Dict[int, Any]:
        """Move the waiting writes (up to number ``through``) into the record now, oldest first; what each
        answered, by number. The caller holds the write order. RecordsUnavailable when the record does not
        answer (at once while it did not answer the last move, unless ``trying``)."""
        if self._away and not trying:
            raise RecordsUnavailable(f"{self._away}; {self._count} records of this worker wait for it")
        answers: Dict[int, Any] = {}
        moved = self._moved
        try:
            while self._count and (through is None or through > self._moved):
                batch = self._batch(through)
                if not batch:
                    break
                answers.update(self._move_batch(batch))
        except RecordsUnavailable as error:
            if self._away is None:
                log.warning(
                    f"{self.worker} - Records database {self.source} unreachable ({error}): records of read-only "
                    f"runs are kept in {self.file.path} until it answers; runs that need it are refused"
                )
            self._away = str(error).split(". Fix:")[0]
            raise
        finally:
            if self._moved > moved:  # once for all the transactions of this catch-up
                self._drop_moved()
        if self._away:
            log.info(f"{self.worker} - Records database {self.source} answers again: the kept records are in it")
            self._away = None
        return answers

    def _batch(self, through: Optional[int]) -> List[Kept]:
        with self._counting:
            fresh = [self._fresh[seq] for seq in sorted(self._fresh)[:BATCH] if through is None or seq <= through]
        if fresh and fresh[0].seq == self._moved + 1:  # no write of the file before them (their numbers follow)
            return fresh
        with self.file.reading() as sqlite:
            rows = sqlite.execute(
                "SELECT seq, name, payload FROM outbox WHERE seq > ? AND seq <= ? ORDER BY seq LIMIT ?",
                (self._moved, through if through is not None else 2**62, BATCH),
            ).fetchall()
        return [self._fresh.get(seq) or Kept(seq, name, json.loads(payload)) for seq, name, payload in rows]

    def _move_batch(self, batch: List[Kept]) -> Dict[int, Any]:
        """One transaction of writes; on a fault of one (never an outage), each on its own, the faulty one set aside."""
        last = batch[-1].seq
        try:
            answers = self._move(batch, lambda db: db.execute(MARK, [self.outbox_id, last, self.worker, time.time()]))
        except RecordsUnavailable:
            raise
        except Exception as error:
            if len(batch) == 1:
                self._set_aside(batch[0], error)
                return {}
            answered: Dict[int, Any] = {}
            for kept in batch:
                answered.update(self._move_batch([kept]))
            return answered
        self._moved = last
        with self._counting:
            for kept in batch:
                self._fresh.pop(kept.seq, None)
            self._count = max(self._count - len(batch), 0)
        return {kept.seq: answer for kept, answer in zip(batch, answers)}

    def _drop_moved(self) -> None:
        """The writes the record holds leave the file (committed and flushed there; a kill before this delete
        leaves them to the next start, which drops them by the record's last mark)."""
        with self.file.transaction() as sqlite:
            sqlite.execute("DELETE FROM outbox WHERE seq <= ?", (self._moved,))

    def _set_aside(self, kept: Kept, error: Exception) -> None:
        """A write the record refused (a fault, never expected): kept aside in the file, logged, and the writes
        after it go on."""
        log.exception(f"{self.worker} - Records database {self.source} refused kept write {kept.seq} ({kept.name})")
        with self.file.transaction() as sqlite:
            sqlite.execute(
                "INSERT OR REPLACE INTO outbox_refused (seq, name, payload, error, refused) VALUES (?, ?, ?, ?, ?)",
                (kept.seq, kept.name, json.dumps(kept.payload, default=str), str(error), time.time()),
            )
            sqlite.execute("DELETE FROM outbox WHERE seq = ?", (kept.seq,))
        with self._counting:
            self._fresh.pop(kept.seq, None)
            self._count = max(self._count - 1, 0)

    def _moving(self) -> None:
        """The thread: moves what waits as soon as it is put; tries an unreachable record every ``RETRY`` s."""
        while not self._stopped.is_set():
            self._wake.wait(RETRY if self._away else None)
            self._wake.clear()
            if self._stopped.is_set():
                return
            try:
                if self._away and not self.db.reachable():
                    continue
                with self._order:
                    self.catch_up(trying=True)
            except RecordsUnavailable:
                self._stopped.wait(RETRY)
            except Exception:  # never expected: the thread goes on, the writes wait in the file
                log.exception(f"{self.worker} - Could not move records into the records database {self.source}")
                self._stopped.wait(RETRY)

    def pending(self) -> List[str]:
        """The names of the writes not in the record yet, oldest first (for tests and get_status)."""
        with self.file.reading() as sqlite:
            rows = sqlite.execute("SELECT name FROM outbox WHERE seq > ? ORDER BY seq", (self._moved,))
            return [name for (name,) in rows]

    def close(self) -> None:
        """Stop the thread, after one more move of what waits (what the record does not take stays in the file)."""
        self._stopped.set()
        self._wake.set()
        self._thread.join(timeout=10)
        try:
            with self._order:
                self.catch_up(trying=True)
        except RecordsUnavailable as error:
            log.warning(f"{self.worker} - {self._count} records stay in {self.file.path}: {error}")
        self.file.close()
