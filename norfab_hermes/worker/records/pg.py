"""
The fleet's records database: PostgreSQL, shared by every hermes worker
whose inventory sets ``records: {backend: postgresql}``.

It answers the statements of the SQLite backend (``?`` placeholders, rows
read by name or position), so ``runs``, ``approvals``, ``audit`` and
``usage`` hold one set of queries for both. The schema is versioned SQL
files (``migrations/NNNN_*.sql``), applied at start under a lock so workers
starting together apply each once; a worker refuses a database whose schema
is newer than it knows. A connection the server dropped is opened again on
the next use; what failed meanwhile failed loudly.

Advisory locks: ``hold`` takes session locks on a connection of their own,
held until released or until that connection ends, so a killed worker's
locks end with it.
"""

import contextlib
import functools
import hashlib
import logging
import re
import threading
import time
from importlib import resources
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Set, Tuple

from ...errors import InventoryError, RecordsUnavailable

log = logging.getLogger(__name__)

CONNECT_TIMEOUT = 5  # seconds: an unreachable server is reported, not waited for
MIGRATION_LOCK = 1  # keys of the advisory lock namespaces (first half of a two-int key)
CHAIN_LOCK = 2
KEY_LOCK = 3  # device locks, dedupe keys, schedule occurrences: by name
WAIT_STEP = 0.05  # seconds between tries of a busy advisory lock
MIGRATION = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")


def migrations() -> List[Tuple[int, str, str]]:
    """(version, file name, SQL) of every schema migration shipped, in order."""
    found = []
    for item in resources.files(__package__).joinpath("migrations").iterdir():
        matched = MIGRATION.match(item.name)
        if matched:
            found.append((int(matched.group(1)), item.name, item.read_text(encoding="utf-8")))
    return sorted(found)


SCHEMA_VERSION = migrations()[-1][0]


def key_of(name: str) -> int:
    """A stable signed 32-bit key for an advisory lock on ``name`` (Python's hash differs per process)."""
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:4], "big", signed=True)


@functools.lru_cache(maxsize=512)
def translate(sql: str) -> str:
    """A statement of the SQLite backend in psycopg's placeholders."""
    return sql.replace("%", "%%").replace("?", "%s")


class Row(tuple):
    """A row read by position or by column name, like ``sqlite3.Row``."""

    names: Dict[str, int] = {}

    def __getitem__(self, key: Any) -> Any:
        return super().__getitem__(self.names[key] if isinstance(key, str) else key)


def row_factory(cursor: Any) -> Callable[[Sequence[Any]], Row]:
    names = {column.name: index for index, column in enumerate(cursor.description or [])}
    kind = type("Row", (Row,), {"names": names})
    return lambda values: kind(values)


class Connection:
    """One psycopg connection answering SQLite-style statements."""

    def __init__(self, raw: Any) -> None:
        self.raw = raw

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        return self.raw.execute(translate(sql), list(params))


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


def connect(dsn: str, source: str) -> Any:
    """A new autocommit connection; RecordsUnavailable naming ``source`` (the DSN's variable) when it fails."""
    psycopg = driver()
    try:
        raw = psycopg.connect(dsn, autocommit=True, connect_timeout=CONNECT_TIMEOUT, row_factory=row_factory)
        # a commit does not wait for its WAL flush: a worker killed loses nothing, a server crash at most the
        # last ~0.6 s (as SQLite's synchronous=NORMAL may lose the last commits to a power cut); 9 commits of
        # a run would otherwise each wait for the disk
        raw.execute("SET synchronous_commit TO off")
        return raw
    except psycopg.Error as error:
        raise RecordsUnavailable(
            f"the records database ({source}) is unreachable: {str(error).strip()}; runs that need a record or "
            "a device lock are refused until it answers"
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
            current = raw.execute("SELECT coalesce(max(version), 0) FROM schema_version").fetchone()[0]
            if current > SCHEMA_VERSION:
                raise RecordsUnavailable(
                    f"the records database ({self.source}) has schema version {current}, newer than this worker's "
                    f"{SCHEMA_VERSION}: upgrade norfab-hermes on this worker, or point records.dsn_env at another "
                    "database"
                )
            for version, name, sql in migrations():
                if version > current:
                    with raw.transaction():
                        raw.execute(sql)
                        raw.execute("INSERT INTO schema_version (version, name) VALUES (%s, %s)", [version, name])
                    log.info(f"Records database {self.source}: applied schema migration {name}")
        finally:
            raw.execute("SELECT pg_advisory_unlock(%s, 0)", [MIGRATION_LOCK])

    def _connection(self) -> Any:
        if self._raw.closed or self._raw.broken:
            self._raw = connect(self.dsn, self.source)
        return self._raw

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Connection]:
        """One write transaction: committed when the block ends, rolled back if it raises."""
        with self._lock, self._failing():
            raw = self._connection()
            with raw.transaction():
                yield Connection(raw)

    @contextlib.contextmanager
    def reading(self) -> Iterator[Connection]:
        """Reads of one consistent moment (one repeatable-read transaction)."""
        with self._lock, self._failing():
            raw = self._connection()
            with raw.transaction():
                raw.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                yield Connection(raw)

    @contextlib.contextmanager
    def _failing(self) -> Iterator[None]:
        psycopg = driver()
        try:
            yield
        except psycopg.OperationalError as error:
            raise RecordsUnavailable(
                f"the records database ({self.source}) did not answer: {str(error).strip()}"
            ) from error

    def serialize(self, db: Connection, name: str) -> None:
        """Writers of ``name`` (the audit chain) of every worker take turns until the transaction ends."""
        db.raw.execute("SELECT pg_advisory_xact_lock(%s, %s)", [CHAIN_LOCK, key_of(name)])

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
        """``hold`` for a block: whether the locks were taken; released when the block ends."""
        session = self.hold(names, wait)
        try:
            yield session is not None
        finally:
            if session is not None:
                self.release(session)

    def on(self, raw: Any, sql: str, params: Sequence[Any] = ()) -> None:
        """One statement on a connection ``hold`` returned (the holder of its locks)."""
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
        return connect(self.dsn, self.source)

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
