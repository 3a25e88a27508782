"""The records on a real PostgreSQL server: the SQLite store's behaviour on the fleet's backend, migrations,
two workers in one record, and the advisory locks held by a session."""

import dataclasses
import itertools
import threading
import time

import psycopg
import pytest
from unit.test_records_store import (  # the same behaviour on the other backend
    WORKER,
    approval,
    either_way,  # noqa: F401
    ended,
    recorded_texts,
    row,
    test_a_dedupe_key_finds_the_run_within_its_window,  # noqa: F401
    test_a_run_of_a_case_names_it_and_its_provenance_in_every_record,  # noqa: F401
    test_a_run_reads_back_whole_with_its_events_from_an_offset,  # noqa: F401
    test_pruning_runs_at_most_hourly,  # noqa: F401
    test_runs_are_found_by_each_filter,  # noqa: F401
    test_runs_come_in_pages,  # noqa: F401
    test_settling_after_a_crash_ends_open_runs_and_approvals,  # noqa: F401
    test_the_daily_usage_adds_up_per_agent_and_day,  # noqa: F401
    test_the_text_filter_finds_a_substring_in_any_case,  # noqa: F401
    test_the_text_filter_follows_the_runs,  # noqa: F401
)

from norfab_hermes.errors import InventoryError, RecordsUnavailable
from norfab_hermes.models import GetRunsInput, RecordsSettings
from norfab_hermes.testing.postgres import new_database
from norfab_hermes.worker.records import move, pg
from norfab_hermes.worker.records.schema import SQLITE_TABLES
from norfab_hermes.worker.records.store import Records

ENV = "NORFAB_HERMES_TEST_PG_DSN"
SETTINGS = RecordsSettings(backend="postgresql", dsn_env=ENV)
numbers = itertools.count()


@pytest.fixture
def dsn(postgres, monkeypatch):
    """A database of the test's own, its DSN in the environment variable the settings name."""
    url = new_database(postgres, f"records_{next(numbers)}")
    monkeypatch.setenv(ENV, url)
    return url


@pytest.fixture
def records(dsn, tmp_path):
    store = Records(tmp_path, WORKER, SETTINGS)
    yield store
    store.close()


def test_the_schema_is_versioned_and_applied_once(dsn, tmp_path):
    """A new database gets every migration; a second worker starting finds them applied."""
    Records(tmp_path, "w1", SETTINGS).close()
    Records(tmp_path, "w2", SETTINGS).close()
    with psycopg.connect(dsn) as db:
        versions = db.execute("SELECT version FROM schema_version ORDER BY version").fetchall()
    assert [v for (v,) in versions] == [version for version, _, _ in pg.migrations()]


def test_migration_0007_indexes_the_runs_text_of_a_record_made_before_it(dsn, tmp_path, monkeypatch):
    """A record migrated without 0007 keeps its runs; with 0007 (pg_trgm, a GIN index on each of the
    instructions and the answer) get_runs' text filter finds them, in any case, and the runs recorded after."""
    every = pg.migrations()
    with monkeypatch.context() as before:
        lacking = [m for m in every if m[0] != 7]  # and any numbered after it: 0007 is applied after them
        before.setattr(pg, "migrations", lambda: lacking)
        before.setattr(pg, "SCHEMA_VERSION", lacking[-1][0])
        old = Records(tmp_path, WORKER, SETTINGS)
        recorded_texts(old)
        old.close()
    with psycopg.connect(dsn) as db:
        assert 7 not in {v for (v,) in db.execute("SELECT version FROM schema_version")}
    records = Records(tmp_path, WORKER, SETTINGS)
    records.run_started(row("r4", instructions="check CORE-1 again"))
    assert [r.run_id for r in records.runs(GetRunsInput(text="core-1")).runs] == ["r4", "r1"]
    assert [r.run_id for r in records.runs(GetRunsInput(text="neighbor 10.0")).runs] == ["r2"]
    assert [r.run_id for r in records.runs(GetRunsInput(text="e-")).runs] == ["r4", "r2", "r1"]
    records.close()
    with psycopg.connect(dsn) as db:
        assert 7 in {v for (v,) in db.execute("SELECT version FROM schema_version")}
        db.execute("SET enable_seqscan = off")  # four runs: the planner would read the table otherwise
        plan = "\n".join(
            line
            for (line,) in db.execute(
                "EXPLAIN SELECT run_id FROM runs WHERE lower(instructions) LIKE lower(%s) ESCAPE '\\' "
                "OR lower(response) LIKE lower(%s) ESCAPE '\\'",
                ["%core-1%", "%core-1%"],
            )
        )
    assert "runs_instructions_text" in plan and "runs_response_text" in plan, plan


def test_a_worker_refuses_a_newer_schema(dsn, tmp_path):
    """A database a newer worker migrated is refused, naming both versions and the fix."""
    Records(tmp_path, "w1", SETTINGS).close()
    with psycopg.connect(dsn) as db:
        db.execute("INSERT INTO schema_version (version, name) VALUES (9999, '9999_future.sql')")
    with pytest.raises(
        RecordsUnavailable, match="schema version 9999, newer than this worker's .*upgrade norfab-hermes"
    ):
        Records(tmp_path, "w1", SETTINGS)


def test_an_unset_dsn_variable_names_it(monkeypatch, tmp_path):
    monkeypatch.delenv(ENV, raising=False)
    with pytest.raises(InventoryError, match=f"records.dsn_env: environment variable {ENV} is not set"):
        Records(tmp_path, "w1", SETTINGS)


def test_an_unreachable_database_is_refused_with_its_variable(monkeypatch, tmp_path):
    monkeypatch.setenv(ENV, "host=127.0.0.1 port=1 dbname=hermes user=hermes connect_timeout=1")
    with pytest.raises(RecordsUnavailable, match=f"records database \\(\\${ENV}\\) is unreachable"):
        Records(tmp_path, "w1", SETTINGS)


def test_postgresql_needs_a_dsn_variable():
    with pytest.raises(ValueError, match="records.dsn_env: backend postgresql needs"):
        RecordsSettings(backend="postgresql")


def test_two_workers_share_runs_and_one_audit_chain(dsn, tmp_path):
    """Two workers write at once into one record: every run is there, the one chain verifies, and a
    restart of one settles only its own open runs."""
    one, two = Records(tmp_path / "w1", "w1", SETTINGS), Records(tmp_path / "w2", "w2", SETTINGS)  # roots of their own

    def of(store, run_id):
        return dataclasses.replace(row(run_id), worker=store.worker)

    def work(store, name):
        for n in range(20):
            store.run_started(of(store, f"{name}-{n}"))
            store.run_ended(ended(f"{name}-{n}"), time.time())

    threads = [threading.Thread(target=work, args=(s, s.worker)) for s in (one, two)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    one.run_started(of(one, "w1-open"))
    two.run_started(of(two, "w2-open"))
    two.approval(approval("a2", run_id="w2-open"), "requested")
    assert one.settle() == (["w1-open"], []), "w2's run and approval are w2's to settle"
    page = two.runs(GetRunsInput(limit=100))
    assert page.total == 42 and {r.worker for r in page.runs} == {"w1", "w2"}
    verified = two.verify()
    assert verified.ok and verified.entries == 2 * 40 + 2 + 1 + 1, verified.problems
    assert one.shared and one.db.record_id == two.db.record_id
    one.close(), two.close()


def test_session_locks_exclude_and_end_with_their_connection(dsn, tmp_path):
    """A name one worker holds another cannot take; closing the holder's connection (a killed worker) frees it."""
    one, two = pg.PgDatabase(dsn, "test"), pg.PgDatabase(dsn, "test")
    held = one.hold(["R1", "R2"], wait=0)
    assert held is not None
    assert two.hold(["R2", "R3"], wait=0.2) is None, "all or none: R2 is held"
    assert two.hold(["R3"], wait=0) is not None, "a refused take left nothing behind"
    held.close()  # the session ends: what a kill -9 does to the worker's connection
    assert two.hold(["R1", "R2"], wait=1) is not None
    one.close(), two.close()


def test_the_move_from_sqlite_keeps_every_run_and_the_audit_chain_verifies(dsn, tmp_path, capsys):
    """A worker's SQLite record moved by the documented command: every run, approval and the usage, the
    audit chain entry by entry (it verifies, with the same head); a second worker's log is refused."""
    old = Records(tmp_path / "w1", WORKER, RecordsSettings())
    for n in range(30):
        old.run_started(row(f"r{n}"))
        old.run_ended(ended(f"r{n}"), time.time())
    old.approval(approval(run_id="r3", state="approved", decided_by="lead"), "decided", "lead")
    old.add_usage("alpha", "2026-12-01", 120, 0.5)
    head, path = old.verify().head, old.path
    old.close()
    assert move.main([str(path), "--dsn-env", ENV]) == 0
    assert "30 runs" in capsys.readouterr().out
    new = Records(tmp_path, WORKER, SETTINGS)
    assert new.runs(GetRunsInput(limit=100)).total == 30 and new.run_state("r7").result.response == "all good"
    assert new.approval_info("a1").decided_by == "lead" and new.spent("alpha", "2026-12-01") == (120, 0.5)
    verified = new.verify()
    assert verified.ok and verified.head == head and verified.entries == 61
    new.run_started(row("after"))
    assert new.verify().ok, "the fleet's chain continues from the moved head"
    new.close()
    other = Records(tmp_path / "w2", "w2", RecordsSettings())
    other.note("agent.created", agent="alpha")
    other.close()
    assert move.main([str(other.path), "--dsn-env", ENV]) == 1
    assert "cannot join it without rewriting its hashes" in capsys.readouterr().err
    assert move.main([str(other.path), "--dsn-env", ENV, "--without-audit"]) == 0


def test_the_sqlite_tables_and_the_postgresql_migrations_define_the_same_columns(dsn, tmp_path):
    """The tables are written once, in the versioned migrations; SQLite's are read from them in its
    words (records/schema.py): each column, and whether it may be empty, is the same on both."""
    lite = Records(tmp_path / "sqlite", WORKER, RecordsSettings())
    Records(tmp_path, WORKER, SETTINGS).close()
    with psycopg.connect(dsn) as db:
        for table in SQLITE_TABLES:  # every table a worker keeps in SQLite is the fleet's too
            theirs = db.execute(
                "SELECT column_name, is_nullable = 'NO' FROM information_schema.columns WHERE table_name = %s",
                [table],
            ).fetchall()
            with lite.db.reading() as sqlite:
                info = sqlite.execute(f"PRAGMA table_info({table})").fetchall()
            # SQLite's PRIMARY KEY columns may hold NULL unless declared NOT NULL; PostgreSQL's never
            ours = {(row["name"], bool(row["notnull"] or row["pk"])) for row in info}
            assert ours == set(theirs), f"table {table}: SQLite {sorted(ours)} against PostgreSQL {sorted(theirs)}"
    lite.close()


def test_a_proof_nonce_is_shared_by_the_fleet(dsn, tmp_path):
    """A proof one worker took is refused by another worker of the record as a job of its own."""
    w1, w2 = Records(tmp_path / "1", "w1", SETTINGS), Records(tmp_path / "2", "w2", SETTINGS)
    try:
        now = time.time()
        assert w1.first_use("n1", "J1", now + 60, now) is None
        assert w2.first_use("n1", "J1", now + 60, now) is None, "one job sent to both: each takes it once"
        assert "used already (replayed)" in w2.first_use("n1", "J1", now + 60, now)
        w1.first_use("n3", "J3", now + 60, now)
        assert "used already by worker 'w1' for another job" in w2.first_use("n3", "J4", now + 60, now)
    finally:
        w1.close()
        w2.close()
