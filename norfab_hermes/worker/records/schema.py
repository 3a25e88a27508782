"""
The record's tables, written once: the versioned SQL files of the PostgreSQL
record (``migrations/NNNN_*.sql``, applied in order by ``pg``), from which the
SQLite record takes the tables one worker keeps, in SQLite's words.

For SQLite every ``CREATE TABLE`` of those tables is made if missing, the
columns a file an older worker wrote lacks are added (``ALTER TABLE ... ADD
COLUMN`` of a later migration included), then the indexes. The tables only a
fleet needs (device lock holders, change jobs in flight, the record's id, the
outbox marks), PostgreSQL's functions, extensions and its own kinds of index
(``USING gin``) stay on PostgreSQL. What SQLite does in their stead is in
``migrations/sqlite/NNNN_*.sql`` (idempotent scripts, run at every open after
the indexes; an FTS5 table a file lacks is filled from its content table when
it is made: a file an older worker wrote is indexed whole).
"""

import logging
import re
import sqlite3
from importlib import resources
from typing import Dict, List, Tuple

log = logging.getLogger(__name__)

MIGRATION = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")
# the tables of one worker's SQLite record; run_details and usage are their key: no rowid beside it
SQLITE_TABLES = (
    "runs",
    "run_details",
    "approvals",
    "audit",
    "audit_anchor",
    "usage",
    "schedule_occurrences",
    "proof_nonces",
)
WITHOUT_ROWID = ("run_details", "usage")
SQLITE_TYPES = (("DOUBLE PRECISION", "REAL"), ("BYTEA", "BLOB"), ("BIGINT", "INTEGER"))
TABLE = re.compile(r"^CREATE TABLE (\w+) \((.*)\)$", re.S)
ADD_COLUMN = re.compile(r"^ALTER TABLE (\w+) ADD COLUMN (.*)$", re.S)
INDEX = re.compile(r"^CREATE INDEX (\w+) ON (\w+) (?!USING )(.*)$", re.S)  # a btree: SQLite's kind too
VIRTUAL_TABLE = re.compile(r"CREATE VIRTUAL TABLE IF NOT EXISTS (\w+) USING fts5\(")


def _numbered(*folder: str) -> List[Tuple[int, str, str]]:
    """(version, file name, text) of the numbered SQL files of ``migrations/<folder>``, in order."""
    found = []
    for item in resources.files(__package__).joinpath("migrations", *folder).iterdir():
        matched = MIGRATION.match(item.name)
        if matched:
            found.append((int(matched.group(1)), item.name, item.read_text(encoding="utf-8")))
    return sorted(found)


def migrations() -> List[Tuple[int, str, str]]:
    """(version, file name, SQL) of every schema migration shipped, in order."""
    return _numbered()


def sqlite_migrations() -> List[Tuple[int, str, str]]:
    """(version, file name, script) of what SQLite does in place of a migration's PostgreSQL-only parts."""
    return _numbered("sqlite")


def statements(sql: str) -> List[str]:
    """The statements of a migration, comments left out (a function body's pieces are not tables)."""
    text = "\n".join(line.split("--")[0].rstrip() for line in sql.splitlines())
    return [" ".join(part.split()) for part in text.split(";") if part.strip()]


def _split_columns(body: str) -> List[str]:
    """A table body's entries at the top level (the commas inside ``PRIMARY KEY (a, b)`` are not)."""
    parts, depth, current = [], 0, ""
    for char in body:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += char
    return parts + [current.strip()] if current.strip() else parts


def sqlite_words(sql: str) -> str:
    for theirs, ours in SQLITE_TYPES:
        sql = sql.replace(theirs, ours)
    return sql


class SqliteSchema:
    """The SQLite record's tables, columns and indexes, read from every migration."""

    def __init__(self) -> None:
        self.tables: Dict[str, List[str]] = {}  # table -> its entries (columns, then constraints)
        self.indexes: List[str] = []
        self.scripts = [script for _, _, script in sqlite_migrations()]
        for _, _, sql in migrations():
            for statement in statements(sql):
                if (table := TABLE.match(statement)) and table.group(1) in SQLITE_TABLES:
                    self.tables[table.group(1)] = _split_columns(sqlite_words(table.group(2)))
                elif (added := ADD_COLUMN.match(statement)) and added.group(1) in SQLITE_TABLES:
                    self.tables[added.group(1)].append(sqlite_words(added.group(2)))
                elif (index := INDEX.match(statement)) and index.group(2) in SQLITE_TABLES:
                    self.indexes.append(
                        f"CREATE INDEX IF NOT EXISTS {index.group(1)} ON {index.group(2)} {index.group(3)}"
                    )

    def tables_script(self) -> str:
        """``CREATE TABLE IF NOT EXISTS`` of every table (a file's tables stay as they are)."""
        return "\n".join(
            f"CREATE TABLE IF NOT EXISTS {name} ({', '.join(entries)})"
            + (" WITHOUT ROWID" if name in WITHOUT_ROWID else "")
            + ";"
            for name, entries in self.tables.items()
        )

    def upgrade(self, db: sqlite3.Connection) -> None:
        """Add the columns a file an older worker wrote lacks, make the indexes, then SQLite's own parts (an
        FTS5 table made now is filled from the rows already there)."""
        for name, entries in self.tables.items():
            present = {row[1] for row in db.execute(f"PRAGMA table_info({name})")}
            for entry in entries:
                column = entry.split()[0]
                if column.upper() not in ("PRIMARY", "UNIQUE", "CHECK", "FOREIGN") and column not in present:
                    db.execute(f"ALTER TABLE {name} ADD COLUMN {entry}")
        for index in self.indexes:
            db.execute(index)
        for script in self.scripts:
            made = [name for name in VIRTUAL_TABLE.findall(script) if not _exists(db, name)]
            fill = "".join(f"INSERT INTO {name} ({name}) VALUES ('rebuild');" for name in made)
            try:
                db.executescript(f"BEGIN IMMEDIATE; {script}\n{fill} COMMIT;")  # made and filled, or neither
            except sqlite3.OperationalError as error:  # FTS5 or its trigram tokenizer missing (SQLite before 3.34)
                if db.in_transaction:
                    db.execute("ROLLBACK")
                log.warning(
                    f"SQLite {sqlite3.sqlite_version} cannot make {', '.join(made)} ({error}): reading runs instead"
                )


def _exists(db: sqlite3.Connection, name: str) -> bool:
    return db.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (name,)).fetchone() is not None
