"""
The records' two backends as the rest of the records see them: a database
(``db.Database``: the worker's SQLite file; ``pg.PgDatabase``: the fleet's
PostgreSQL) and what its statements run on (SQLite's connection, a PostgreSQL
write transaction ``pg_batch.Connection`` or read ``pg_batch.Reader``). The
record's functions take these, not a backend's classes, so the type checker
holds each backend to the same statements.
"""

from pathlib import Path
from typing import Any, ContextManager, Iterator, List, Optional, Protocol, Sequence, Tuple, TypeVar, Union


class Row(Protocol):
    """One row read, by column name or position (``sqlite3.Row``, ``pg_batch.Row``)."""

    def __getitem__(self, key: Union[int, str], /) -> Any: ...


class Answer(Protocol):
    """What one statement answered: its rows (read by name or position) and how many it changed."""

    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> List[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class Connection(Protocol):
    """Runs SQLite-style statements (``?`` placeholders)."""

    def execute(self, sql: str, params: Sequence[Any] = ..., /) -> Answer: ...


C = TypeVar("C", bound=Connection)


class Backend(Protocol[C]):
    """A records database; ``C``: its write transaction's connection (the audit chain's head is moved on it)."""

    @property
    def path(self) -> Union[Path, str]: ...

    @property
    def shared(self) -> bool: ...  # the fleet's: other workers write it too

    @property
    def record_id(self) -> Optional[str]: ...

    def transaction(self) -> ContextManager[C]: ...

    def reading(self) -> ContextManager[Connection]: ...

    def chain_head(self, db: C) -> Tuple[int, str]: ...

    def move_head(self, db: C, before: Tuple[int, str], after: Tuple[int, str]) -> None: ...

    def deleting(self) -> ContextManager[None]: ...  # a long deletion in many transactions (retention)

    def checkpoint(self) -> None: ...  # within ``deleting``, between its transactions

    def compact(self) -> None: ...

    def close(self) -> None: ...
