"""The audit log's hash chain: each entry linked to the one before; an edit, a gap or a cut tail shows."""

import sqlite3

import pytest

from norfab_hermes.identity.audit import verify_export
from norfab_hermes.worker.records import audit
from norfab_hermes.worker.records.db import Database
from norfab_hermes.worker.records.schema import SqliteSchema


def database(path):
    """A worker's SQLite record at ``path``, its tables as the migrations define them."""
    tables = SqliteSchema()
    return Database(path, [tables.tables_script()], [tables.upgrade])


@pytest.fixture
def log(tmp_path):
    """A database with five entries: run.started, three tool calls, run.ended."""
    db = database(tmp_path / "records.db")
    with db.transaction() as tx:
        audit.append(tx, "w1", "run.started", "alpha", "r1", "noc", {"instructions": "check r1"})
        for n in range(3):
            audit.append(tx, "w1", "tool.call", "alpha", "r1", None, {"job_uuid": f"J{n}"})
        audit.append(tx, "w1", "run.ended", "alpha", "r1", "noc", {"stop_reason": "completed"})
    return db


def verify(db):
    with db.reading() as tx:
        return audit.verify(tx, "w1")


def change(db, sql, *params):
    """What an intruder with sqlite3 does to the file."""
    with sqlite3.connect(db.path) as raw:
        raw.execute(sql, params)


def test_an_untouched_log_verifies(log):
    """Every entry links to the one before, from the genesis link to the head."""
    found = verify(log)
    assert (found.ok, found.entries, found.first_seq, found.last_seq, found.problems) == (True, 5, 1, 5, [])
    with log.reading() as tx:
        entries = audit.page(tx, 0, 10).entries
    assert entries[0].prev == audit.GENESIS and found.head == entries[-1].hash
    assert all(after.prev == before.hash for before, after in zip(entries, entries[1:]))


@pytest.mark.parametrize(
    "column, value",
    [("data", '{"instructions":"check r2"}'), ("actor", "someone"), ("kind", "x"), ("time", "2020-01-01")],
)
def test_an_edited_field_breaks_its_entry(log, column, value):
    """Editing any field of an entry makes its hash disagree with it."""
    change(log, f"UPDATE audit SET {column} = ? WHERE seq = 1", value)
    assert verify(log).problems == ["entry 1 was edited: its hash does not match its content"]


def test_an_entry_rehashed_after_an_edit_breaks_the_next_link(log):
    """Recomputing an edited entry's hash does not help: the next entry still links to the old one."""
    with log.reading() as tx:
        row = tx.execute("SELECT * FROM audit WHERE seq = 2").fetchone()
    forged = audit.entry_hash(row["prev"], 2, row["time"], "w1", "tool.call", "alpha", "r1", None, '{"job_uuid":"J9"}')
    change(log, "UPDATE audit SET data = ?, hash = ? WHERE seq = 2", '{"job_uuid":"J9"}', forged)
    assert verify(log).problems == ["entry 3 does not follow entry 2: the link to it was changed"]


def test_a_deleted_entry_leaves_a_gap(log):
    change(log, "DELETE FROM audit WHERE seq IN (2, 3)")
    assert verify(log).problems[0] == "entries 2 to 3 are missing (deleted)"


def test_a_cut_tail_disagrees_with_the_head(log):
    """Deleting the newest entries is caught by the head kept beside the log."""
    change(log, "DELETE FROM audit WHERE seq >= 4")
    problems = verify(log).problems
    assert len(problems) == 1 and "the log ends at entry 3 but its head is entry 5" in problems[0]


def test_pruning_keeps_the_chain_verifiable(log):
    """Pruned entries leave their last link behind: the rest still verifies, and appends go on."""
    with log.transaction() as tx:
        edge = audit.prune_edge(tx, cutoff="0000", keep=2)
        assert [audit.prune(tx, edge, batch=2) for _ in range(3)] == [2, 1, 0]  # by batches, up to the edge
        audit.append(tx, "w1", "records.pruned", data={"audit_entries": 3})
    found = verify(log)
    assert (found.ok, found.first_seq, found.last_seq) == (True, 4, 6)
    change(log, "DELETE FROM audit WHERE seq = 4")
    assert verify(log).problems[0] == "entries 4 to 4 are missing (deleted)"


def test_pages_follow_each_other_and_filter(log):
    """A page ends where the next begins (next_after); filters narrow the entries."""
    with log.reading() as tx:
        first = audit.page(tx, 0, 2)
        second = audit.page(tx, first.next_after, 10)
        calls = audit.page(tx, 0, 10, kind="tool.call")
        by_actor = audit.page(tx, 0, 10, run_id="r1", agent="alpha")
    assert [e.seq for e in first.entries] == [1, 2] and first.next_after == 2
    assert [e.seq for e in second.entries] == [3, 4, 5] and second.next_after is None
    assert [e.data["job_uuid"] for e in calls.entries] == ["J0", "J1", "J2"]
    assert len(by_actor.entries) == 5


def exported(db):
    """The log as ``hermes audit export`` writes it: one entry a line."""
    with db.reading() as tx:
        return [entry.model_dump_json() for entry in audit.page(tx, 0, 100).entries]


def test_an_exported_log_is_checked_offline_chain_by_chain(log, tmp_path):
    """Two records' chains one after the other verify; an edit, a removed line and a bad line are each named."""
    other = database(tmp_path / "other.db")
    with other.transaction() as tx:
        audit.append(tx, "w2", "run.started", "beta", "r9", "ops", {"instructions": "check r9"})
    lines = exported(log) + exported(other)
    assert verify_export(lines) == (6, [])
    edited = lines[:1] + [lines[1].replace('"J0"', '"J7"')] + lines[3:] + ["not json"]
    count, problems = verify_export(edited)
    assert count == 5 and problems[:2] == [
        "entry 2 was edited: its hash does not match its content",
        "entries 3 to 3 are missing (deleted)",
    ]
    assert problems[2].startswith("line 6: not an audit entry")
