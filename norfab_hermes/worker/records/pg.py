"""
The fleet's records database: PostgreSQL, shared by every hermes worker
whose inventory sets ``records: {backend: postgresql}``.

It answers the statements of the SQLite backend (``?`` placeholders, rows
read by name or position), so ``runs``, ``approvals``, ``audit`` and
``usage`` hold one set of queries for both. The schema is versioned SQL
files (``migrations/NNNN_*.sql``), each one the database lacks applied at
start under a lock so workers starting together apply each once; a worker
refuses a database whose schema is newer than it knows. A connection the
server dropped is opened again on the next use; what failed meanwhile failed
loudly.

A write appends its audit entries after the chain's head as this worker
last left it and moves the head once for all of them, before the first
(``hermes_move_head`` locks the head's row, the chain's lock, and fails the
write when another worker appended meanwhile).

Advisory locks: ``hold`` takes session locks on a connection of their own,
held until released or until that connection ends, so a killed worker's
locks end with it.
"""

import contextlib
import hashlib
import logging
import threading
import time
from typing import Any, Callable, Iterator, List, Optional, Sequence, Set, Tuple

from ...errors import InventoryError, RecordsUnavailable
from . import audit, statements
from .audit import ChainMoved
from .pg_batch import Connection, Reader, row_factory, translate
from .schema import migrations

log = logging.getLogger(__name__)

CONNECT_TIMEOUT = 5  # seconds: an unreachable server is reported, not waited for
MIGRATION_LOCK = 1  # keys of the advisory lock namespaces (first half of a two-int key)
CHAIN_LOCK = 2
KEY_LOCK = 3  # device locks, dedupe keys, schedule occurrences: by name
PREPARE_AFTER = 1  # uses of a statement before it is prepared on the server (psycopg's default: 5)
WAIT_STEP = 0.05  # seconds between tries of a busy advisory lock
CHAIN_MOVED = "40001"  # what hermes_move_head raises (serialization_failure) when another worker appended first


SCHEMA_VERSION = migrations()[-1][0]


def key_of(name: str) -> int:
    """A stable signed 32-bit key for an advisory lock on ``name`` (Python's hash differs per process)."""
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:4], "big", signed=True)


def driver() -> Any:
    """psycopg, the worker's postgresql extra (a SQLite worker never imports it)."""
    try:
        import psycopg
    except ImportError:
        raise InventoryError(
            "records.backend: postgresql needs the psycopg driver on the hermes worker: install it with "
            "'uv pip install --override worker-overrides.txt \"norfab-hermes[worker,postgresql]\"'"
        ) from None
    return psycopg


def fix(source: str) -> str:
    """What an operator does about an unreachable record (``source``: the DSN's variable, ``$NAME``)."""
    return f"Fix: start or reach the PostgreSQL server that {source.lstrip('$')} names, or correct {source.lstrip('$')}"


def connect(dsn: str, source: str) -> Any:
    """A new autocommit connection; RecordsUnavailable naming ``source`` (the DSN's variable) when it fails."""
    psycopg = driver()
    try:
        # every commit waits for its WAL flush (the server's synchronous_commit, on by default): a write that
        # returned survives a crash of the server as well as the worker's
        raw = psycopg.connect(dsn, autocommit=True, connect_timeout=CONNECT_TIMEOUT, row_factory=row_factory)
        raw.prepare_threshold = PREPARE_AFTER
        return raw
    except psycopg.Error as error:
        raise RecordsUnavailable(
            f"the records database ({source}) is unreachable: {str(error).strip()}; runs that need a record or "
            f"a device lock are refused until it answers. {fix(source)}"
        ) from error


class PgDatabase:
    """
    The PostgreSQL record, behind the interface of the SQLite ``Database``.

    Args:
        dsn: the connection string (from the environment, never the inventory).
        source: where the DSN came from, for messages (e.g. ``$NORFAB_HERMES_PG_DSN``).
    """

    shared = True  # every worker of the fleet reads and writes it

    def __init__(self, dsn: str, source: str) -> None:
        self.dsn, self.source = dsn, source
        self._lock = threading.RLock()
        self._raw = connect(dsn, source)
        self._migrate()
        with self.reading() as db:
            self.record_id = db.execute("SELECT value FROM record_meta WHERE name = 'record_id'").fetchone()[0]
        self._head: Optional[Tuple[int, str]] = None  # the audit chain's head as this worker last left it
        self._idle: List[Any] = []  # connections of released advisory locks, for the next holder
        self._idle_lock = threading.Lock()

    @property
    def path(self) -> str:
        return f"postgresql ({self.source})"

    def _migrate(self) -> None:
        """Apply the migrations the database lacks."""
        raw = self._raw
        raw.execute("SELECT pg_advisory_lock(%s, 0)", [MIGRATION_LOCK])  # workers starting together wait here
        try:
            if raw.execute("SELECT to_regclass('schema_version')").fetchone()[0] is None:  # a role without CREATE
                raw.execute(  # may run a database whose schema is applied: it creates nothing then
                    "CREATE TABLE schema_version "
                    "(version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied TIMESTAMPTZ NOT NULL DEFAULT now())"
                )
            applied = {version for (version,) in raw.execute("SELECT version FROM schema_version").fetchall()}
            current = max(applied, default=0)
            if current > SCHEMA_VERSION:
                raise RecordsUnavailable(
                    f"the records database ({self.source}) has schema version {current}, newer than this worker's "
                    f"{SCHEMA_VERSION}: upgrade norfab-hermes on this worker, or point records.dsn_env at another "
                    "database"
                )
            for version, name, sql in migrations():
                if version not in applied:  # a number below the newest applied, too (branches merged)
                    with raw.transaction():
                        raw.execute(sql)
                        raw.execute("INSERT INTO schema_version (version, name) VALUES (%s, %s)", [version, name])
                    log.info(f"Records database {self.source}: applied schema migration {name}")
        finally:
            raw.execute("SELECT pg_advisory_unlock(%s, 0)", [MIGRATION_LOCK])

    def reachable(self) -> bool:
        """Whether the database answers now."""
        try:
            with self._lock, self._failing():
                self._connection().execute("SELECT 1")
            return True
        except RecordsUnavailable:
            return False

    def _connection(self) -> Any:
        if self._raw.closed or self._raw.broken:
            self._raw = connect(self.dsn, self.source)
        return self._raw

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Connection]:
        """One write transaction: committed when the block ends, rolled back if it raises.

        ``ChainMoved`` when another worker appended to the audit chain since this
        one last did (the head it knew is stale): the caller writes again.
        """
        psycopg = driver()
        with self._lock, self._failing():
            db = Connection(self._connection())
            try:
                yield db
                db.commit()
            except BaseException as error:
                self._head = None
                db.abandon()
                if isinstance(error, (psycopg.errors.UniqueViolation, psycopg.errors.SerializationFailure)) and (
                    error.diag.table_name == "audit" or error.sqlstate == CHAIN_MOVED
                ):
                    raise ChainMoved(str(error)) from error
                raise
            if db.head is not None:
                self._head = db.head

    def chain_head(self, db: Connection) -> Tuple[int, str]:
        """Where the audit chain ends: as this transaction left it, as this worker last left it (checked
        at the commit), or read from the record, its head row locked until the commit."""
        if db.head is not None:
            return db.head
        if self._head is not None:
            return self._head
        row = db.execute("SELECT seq, hash FROM audit_anchor WHERE name = 'head' FOR UPDATE").fetchone()
        return (row[0], row[1]) if row else (0, audit.GENESIS)

    def move_head(self, db: Connection, before: Tuple[int, str], after: Tuple[int, str]) -> None:
        """The chain's head row moves from ``before`` to ``after`` (once for all the entries of the transaction);
        the commit fails (ChainMoved) if it was not at ``before`` any more."""
        db.move_head(before, after)

    def marked(self, outbox: str) -> int:
        """The number of the last write of ``outbox`` the record holds (its last mark; 0: none)."""
        with self.reading() as db:
            seq: int = db.execute(
                "SELECT coalesce(max(seq), 0) FROM buffered_writes WHERE outbox = ?", [outbox]
            ).fetchone()[0]
            return seq

    @contextlib.contextmanager
    def reading(self) -> Iterator[statements.Connection]:
        """Reads of one consistent moment (one repeatable-read transaction)."""
        with self._lock, self._failing():
            raw = self._connection()
            with raw.transaction():
                raw.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                yield Reader(raw)

    @contextlib.contextmanager
    def _failing(self) -> Iterator[None]:
        psycopg = driver()
        try:
            yield
        except psycopg.OperationalError as error:
            raise RecordsUnavailable(
                f"the records database ({self.source}) did not answer: {str(error).strip()}. {fix(self.source)}"
            ) from error

    def serialize(self, db: Connection, name: str) -> None:
        """Writers of ``name`` of every worker take turns until the transaction ends (a move into the record)."""
        db.raw.execute("SELECT pg_advisory_xact_lock(%s, %s)", [CHAIN_LOCK, key_of(name)])

    @contextlib.contextmanager
    def deleting(self) -> Iterator[None]:
        """A long deletion (retention): the server checkpoints on its own."""
        yield

    def checkpoint(self) -> None:
        """The server checkpoints on its own."""

    def compact(self) -> None:
        """PostgreSQL's autovacuum gives deleted rows' space back on its own."""

    # ------------------------------------------------------ advisory locks

    def hold(self, names: Sequence[str], wait: float, stopped: Callable[[], bool] = lambda: False) -> Optional[Any]:
        """Session locks on every name, or none: the connection holding them, or None after ``wait`` s."""
        raw = self._lock_connection()
        keys = [key_of(name) for name in sorted(set(names))]
        deadline = time.time() + max(wait, 0.0)
        with self._failing():
            return self._take(raw, keys, deadline, stopped)

    def _take(self, raw: Any, keys: List[int], deadline: float, stopped: Callable[[], bool]) -> Optional[Any]:
        while True:
            taken = []
            for key in keys:
                if not raw.execute("SELECT pg_try_advisory_lock(%s, %s)", [KEY_LOCK, key]).fetchone()[0]:
                    break
                taken.append(key)
            else:
                return raw
            for key in taken:
                raw.execute("SELECT pg_advisory_unlock(%s, %s)", [KEY_LOCK, key])
            if time.time() >= deadline or stopped():
                self._reuse(raw)
                return None
            time.sleep(WAIT_STEP)

    @contextlib.contextmanager
    def holding(self, names: Sequence[str], wait: float) -> Iterator[bool]:
        """``hold`` for a block: whether the locks were taken; released when the block ends (no names: the
        database is not asked)."""
        if not names:
            yield True
            return
        session = self.hold(names, wait)
        try:
            yield session is not None
        finally:
            if session is not None:
                self.release(session)

    def on(self, raw: Any, sql: str, params: Sequence[Any] = ()) -> None:
        """One statement on a connection ``hold`` returned (the holder of its locks): it commits without
        waiting for the WAL flush (a holder row is information; the lock is the advisory lock)."""
        with self._failing():
            raw.execute(translate(sql), list(params))

    def taken(self, names: Sequence[str]) -> Set[str]:
        """Which of ``names`` a session of any worker holds now."""
        with self.reading() as db:
            rows = db.execute(
                "SELECT objid FROM pg_locks WHERE locktype = 'advisory' AND classid = ? AND granted", [KEY_LOCK]
            ).fetchall()
        held = {objid for (objid,) in rows}  # an oid: the key's unsigned 32 bits
        return {name for name in names if key_of(name) & 0xFFFFFFFF in held}

    def release(self, raw: Any) -> None:
        """End the locks ``hold`` took on ``raw``."""
        try:
            raw.execute("SELECT pg_advisory_unlock_all()")
        except Exception:  # the connection broke: its locks ended with it
            raw.close()
            return
        self._reuse(raw)

    def _lock_connection(self) -> Any:
        with self._idle_lock:
            while self._idle:
                raw = self._idle.pop()
                if not (raw.closed or raw.broken):
                    return raw
        raw = connect(self.dsn, self.source)
        raw.execute("SET synchronous_commit TO off")  # its writes: holder rows (see ``on``)
        return raw

    def _reuse(self, raw: Any) -> None:
        with self._idle_lock:
            self._idle.append(raw)

    def close(self) -> None:
        with self._lock:
            self._raw.close()
        with self._idle_lock:
            for raw in self._idle:
                raw.close()
            self._idle.clear()
