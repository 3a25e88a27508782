"""
One write transaction on the fleet's record, answering the statements of the
SQLite backend (``?`` placeholders, rows read by name or position).

Its statements wait, bound on the worker, and go to the server together as
one simple query from BEGIN to COMMIT: one round trip per write, however many
statements it has, unless it reads something on the way. Only ``pg`` imports
this module, and only once the driver is there (a SQLite worker never imports it).
"""

import functools
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple


@functools.lru_cache(maxsize=512)
def translate(sql: str) -> str:
    """A statement of the SQLite backend in psycopg's placeholders."""
    return sql.replace("%", "%%").replace("?", "%s")


class Row(Tuple[Any, ...]):
    """A row read by position or by column name, like ``sqlite3.Row``."""

    names: Dict[str, int] = {}

    def __getitem__(self, key: Any) -> Any:
        return super().__getitem__(self.names[key] if isinstance(key, str) else key)


@functools.lru_cache(maxsize=256)
def row_class(names: Tuple[str, ...]) -> type:
    """The row class of one set of columns (made once: a class per statement cost ~50 us)."""
    return type("Row", (Row,), {"names": {name: index for index, name in enumerate(names)}})


def row_factory(cursor: Any) -> Callable[[Sequence[Any]], Row]:
    return row_class(tuple(column.name for column in cursor.description or []))


class Reader:
    """One psycopg connection answering SQLite-style statements at once (reads, migrations, locks)."""

    def __init__(self, raw: Any) -> None:
        self.raw = raw

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        return self.raw.execute(translate(sql), list(params))


class Answer:
    """What one statement of a write answered, once its batch reached the server (asking sends it)."""

    def __init__(self, batch: "Connection") -> None:
        self.batch, self.count, self.next = batch, -1, 0
        self.rows: Optional[List[Any]] = None  # once the batch was sent

    def answered(self, cursor: Any) -> None:
        self.rows, self.count = (cursor.fetchall() if cursor.description else []), cursor.rowcount

    def _rows(self) -> List[Any]:
        if self.rows is None:
            self.batch.flush()
        assert self.rows is not None  # the flush answered every statement waiting
        return self.rows

    @property
    def rowcount(self) -> int:
        self._rows()
        return self.count

    def fetchone(self) -> Any:
        rows = self._rows()
        self.next += 1
        return rows[self.next - 1] if self.next <= len(rows) else None

    def fetchall(self) -> List[Any]:
        rows, self.next = self._rows()[self.next :], len(self._rows())
        return rows

    def __iter__(self) -> Iterator[Any]:
        return iter(self.fetchall())


FLOATS = {"inf": "'Infinity'::float8", "-inf": "'-Infinity'::float8", "nan": "'NaN'::float8"}


def literal(value: Any) -> Optional[str]:
    """``value`` as an SQL literal where strings are standard-conforming, or None for a value psycopg binds."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, float):
        return FLOATS.get(repr(float(value)), repr(float(value)))
    if isinstance(value, str):
        return None if "\x00" in value else "'" + value.replace("'", "''") + "'"
    if isinstance(value, bytes):
        return f"'\\x{value.hex()}'::bytea"
    return None


class Connection:
    """
    One write transaction on a psycopg connection, answering SQLite-style statements.

    Its statements wait, bound on the client, and go to the server together as
    one simple query (BEGIN ... COMMIT): one round trip per write, unless the
    write reads something on the way (a fetch, a row count sends what waits).

    Args:
        raw: an autocommit connection (the transaction is this batch's own); its commit
            waits for the WAL flush (the server's synchronous_commit, on by default).
    """

    def __init__(self, raw: Any) -> None:
        self.raw = raw
        from psycopg import ClientCursor  # the worker's postgresql extra, there once a connection is

        self.mogrify = ClientCursor(raw).mogrify
        # only a quote is special in a string literal then (PostgreSQL's default since 9.1)
        self.plain = raw.info.parameter_status("standard_conforming_strings") == "on"
        self.waiting: List[Tuple[str, Answer]] = []
        self.begun = False  # something of the transaction reached the server
        self.head: Optional[Tuple[int, str]] = None  # the audit chain's head this transaction moved it to
        self.moved_from: Optional[Tuple[int, str]] = None  # the head before the entries not sent yet
        self.head_slot: Optional[int] = None  # where the head's move goes among the statements waiting
        self.execute("BEGIN")

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Answer:
        answer = Answer(self)
        self.waiting.append((self.bind(sql, params), answer))
        return answer

    def bind(self, sql: str, params: Sequence[Any]) -> str:
        """The statement with its values written in (psycopg's binding, ~60 us a statement, for what is not
        a plain value)."""
        parts = sql.split("?")
        values = [literal(value) for value in params] if self.plain and len(parts) == len(params) + 1 else [None]
        literals = [value for value in values if value is not None]
        if len(literals) < len(values):
            return self.mogrify(translate(sql), list(params))
        return "".join(part + value for part, value in zip(parts, literals)) + parts[-1]

    def move_head(self, before: Tuple[int, str], after: Tuple[int, str]) -> None:
        """The head moves from ``before`` to ``after``: one statement, before the first entry not sent yet,
        moving it to where the last of them leaves it (filled in when the statements are sent)."""
        if self.head_slot is None:
            self.head_slot, self.moved_from = len(self.waiting), before
            self.waiting.append(("", Answer(self)))
        self.head = after

    def flush(self) -> None:
        """Send what waits, as one query; each statement's answer to its ``Answer``."""
        if self.head_slot is not None and self.moved_from is not None and self.head is not None:
            moved = self.bind("SELECT hermes_move_head(?, ?, ?, ?)", [*self.moved_from, *self.head])
            self.waiting[self.head_slot] = (moved, self.waiting[self.head_slot][1])
            self.head_slot = self.moved_from = None
        waiting, self.waiting = self.waiting, []
        if not waiting:
            return
        self.begun = True
        cursor = self.raw.cursor()
        cursor.execute(";\n".join(sql for sql, _ in waiting).encode())
        for index, (_, answer) in enumerate(waiting):
            if index:
                cursor.nextset()
            answer.answered(cursor)

    def commit(self) -> None:
        self.execute("COMMIT")
        self.flush()

    def abandon(self) -> None:
        """Nothing of it stays: what waits is dropped, what reached the server is rolled back."""
        self.waiting = []
        if self.begun and not (self.raw.closed or self.raw.broken):
            try:
                self.raw.execute("ROLLBACK")
            except Exception:  # the connection broke meanwhile: the server rolled it back
                pass
