"""The worker's records on a real SQLite file: runs, approvals, usage, settling after a crash, retention."""

import json
import sqlite3
import threading
import time

import pytest

from norfab_hermes.models import (
    ApprovalInfo,
    GetRunsInput,
    InvokeResultData,
    Provenance,
    RecordsSettings,
    RunStateData,
    RunUsage,
    ToolCallSummary,
)
from norfab_hermes.worker.records import retention as retention_module
from norfab_hermes.worker.records import runs as runs_module
from norfab_hermes.worker.records import schema as schema_module
from norfab_hermes.worker.records.db import RECORDS_FILE
from norfab_hermes.worker.records.runs import RunRow
from norfab_hermes.worker.records.store import Records

WORKER = "w1"


@pytest.fixture
def records(tmp_path):
    return Records(tmp_path, WORKER, RecordsSettings())


def row(run_id, agent="alpha", started=None, **fields):
    return RunRow(
        run_id, agent, WORKER, started or time.time(), fields.pop("instructions", f"check {run_id}"), **fields
    )


def call(job="J1"):
    return ToolCallSummary(tool="clock", arguments_digest="abc", status="completed", duration=0.2, job_uuid=job)


def approval(approval_id="a1", run_id="r1", state="pending", **fields):
    return ApprovalInfo(
        approval_id=approval_id,
        run_id=run_id,
        agent="alpha",
        worker=WORKER,
        tool="bounce",
        target="nornir.cli on any",
        arguments={"FB": "r1"},
        arguments_digest="d1",
        state=state,
        requested="2026-12-01T02:00:00.000+00:00",
        expires="2026-12-01T02:10:00.000+00:00",
        **fields,
    )


def ended(run_id, response="all good", stop_reason="completed", tokens=100):
    result = InvokeResultData(
        response=response,
        run_id=run_id,
        session_id="s1",
        agent="alpha",
        worker=WORKER,
        stop_reason=stop_reason,
        tool_calls=[call()],
        usage=RunUsage(api_calls=2, total_tokens=tokens),
    )
    return RunStateData(
        run_id=run_id,
        agent="alpha",
        worker=WORKER,
        session_id="s1",
        state="finished",
        stop_reason=stop_reason,
        started="2026-12-01T02:00:00+00:00",
        events=[{"time": "2026-12-01T02:00:01+00:00", "message": f"run {run_id} started"}],
        result=result,
    )


def test_a_run_reads_back_whole_with_its_events_from_an_offset(records):
    """An ended run is read back as get_run shows it: instructions, result, events from the offset asked."""
    records.run_started(row("r1", client="noc-client"))
    records.run_ended(ended("r1"), time.time())
    state = records.run_state("r1")
    assert (state.instructions, state.result.response, state.result.tool_calls[0].job_uuid) == (
        "check r1",
        "all good",
        "J1",
    )
    assert (len(state.events), state.next_offset) == (1, 1)
    assert records.run_state("r1", offset=1).events == []
    assert records.run_state("nope") is None


def test_an_approval_and_an_audit_entry_leave_out_what_has_no_value_and_read_back_whole(records, tmp_path):
    """An approval's defaults and an audit entry's empty details are not written (a smaller file); what is read
    back is what was written, and the log verifies."""
    change = approval("a2", approvers=["lead"], devices=["sw1"], preview={"sw1": "+ shutdown"}, change_digest="c4")
    records.run_started(row("r1"))
    records.approval(approval(), "requested")
    records.approval(change, "requested")
    decided = change.model_copy(update={"state": "approved", "decided_by": "lead", "note": "CHG-1"})
    records.approval(decided, "decided", "lead")
    assert (records.approval_info("a1"), records.approval_info("a2")) == (approval(), decided)
    with sqlite3.connect(tmp_path / RECORDS_FILE) as db:
        info = json.loads(db.execute("SELECT info FROM approvals WHERE approval_id = 'a1'").fetchone()[0])
        entries = {kind: json.loads(data) for kind, data in db.execute("SELECT kind, data FROM audit")}
    assert not {"approvals_required", "preview", "devices", "decided_by"} & set(info), info
    assert "session_id" not in entries["run.started"] and entries["run.started"]["instructions"] == "check r1"
    assert entries["approval.decided"]["note"] == "CHG-1"
    assert records.audit_page(0, 10, kind="run.started").entries[0].data.get("session_id") is None
    assert records.verify().ok


def test_the_records_survive_a_new_connection(tmp_path):
    """What one Records wrote, another one on the same folder reads (a restarted worker)."""
    Records(tmp_path, WORKER, RecordsSettings()).run_started(row("r1"))
    assert Records(tmp_path, WORKER, RecordsSettings()).runs(GetRunsInput(limit=10)).runs[0].run_id == "r1"


def test_settling_after_a_crash_ends_open_runs_and_approvals(records):
    """A run and an approval a crash left open end as cut by the restart; the run keeps its tool calls."""
    records.run_started(row("r1"))
    records.tool_call("alpha", "r1", [call("J7")])
    records.approval(approval(), "requested")
    assert records.runs(GetRunsInput(limit=10)).runs[0].state == "waiting_for_approval"
    assert records.settle() == (["r1"], ["a1"])
    state = records.run_state("r1")
    assert (state.state, state.stop_reason) == ("finished", "interrupted")
    assert state.result.tool_calls[0].job_uuid == "J7"
    assert state.approvals[0].state == "expired" and "worker restart" in state.approvals[0].note
    assert records.approval_info("a1").state == "expired"
    assert records.settle() == ([], []), "settling twice changes nothing"


@pytest.mark.parametrize(
    "filters, expected",
    [
        ({}, ["r3", "r2", "r1"]),
        ({"agent": "beta"}, ["r2"]),
        ({"text": "NEEDLE"}, ["r1"]),
        ({"text": "50%"}, ["r3"]),
        ({"stop_reason": "token_budget"}, ["r3"]),
        ({"state": "queued"}, ["r2"]),
        ({"schedule_id": "s9"}, ["r3"]),
        ({"decided_by": "lead"}, ["r1"]),
        ({"since": "2026-12-01T02:00:30+00:00"}, ["r3", "r2"]),
        ({"until": "2026-12-01T02:00:30+00:00"}, ["r1"]),
        ({"case_id": "INC-1"}, ["r3", "r1"]),
        ({"model": "beta-model"}, ["r2"]),
        ({"provider": "custom"}, ["r3", "r2", "r1"]),
        ({"definition_digest": "d-alpha"}, ["r3", "r1"]),
        ({"hermes_version": "0.0.1"}, []),
    ],
)
def test_runs_are_found_by_each_filter(records, filters, expected):
    """get_runs' filters each narrow the runs, newest first; text matches any case and literally."""
    base = 1796090400.0  # 2026-12-01T02:00:00Z
    alpha, beta = made("alpha-model", "d-alpha"), made("beta-model", "d-beta")
    records.run_started(row("r1", started=base, instructions="find the needle", case_id="INC-1", provenance=alpha))
    records.run_started(row("r2", agent="beta", started=base + 60, provenance=beta))
    records.run_started(
        row("r3", started=base + 120, schedule_id="s9", instructions="50% loss", case_id="INC-1", provenance=alpha)
    )
    records.run_ended(ended("r1"), base + 10)
    records.run_ended(ended("r3", stop_reason="token_budget"), base + 130)
    records.approval(approval(state="approved", decided_by="lead"), "decided", "lead")
    assert [r.run_id for r in records.runs(GetRunsInput(limit=10, **filters)).runs] == expected


TEXTS = {  # run id: (instructions, answer)
    "r1": ("Check interfaces on CORE-1: users report loss", "Gi0/1 is DOWN since 02:10"),
    "r2": ("Show BGP on edge-2", "neighbor 10.0.0.1 Established"),
    "r3": ("Find 50%_off in the logs", "nothing found"),
}


@pytest.fixture(params=["index", "scan"])
def either_way(request, monkeypatch):
    """SQLite finds a text through its trigram index, or by reading the runs (few runs, a common or short text):
    each way finds the same runs (PostgreSQL's planner chooses its own)."""
    way = (lambda db, where, params, text: runs_module.trigrams(text)) if request.param == "index" else None
    monkeypatch.setattr(runs_module, "_lookup", way or (lambda *args: None))


def recorded_texts(records, names=TEXTS):
    base = time.time() - 100  # within the retention
    for n, (run_id, (instructions, answer)) in enumerate(names.items()):
        records.run_started(row(run_id, started=base + n, instructions=instructions))
        records.run_ended(ended(run_id, response=answer), base + n + 0.5)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("interfaces on core", ["r1"]),  # a substring of the instructions, in another case
        ("gi0/1 is down", ["r1"]),  # of the answer
        ("ESTABLISHED", ["r2"]),
        ("0%_o", ["r3"]),  # % and _ are the text's own
        ("0_", []),
        ("e-", ["r2", "r1"]),  # shorter than a trigram: 'CORE-1', 'edge-2'
        ("%", ["r3"]),
        ("loss on", []),  # each of the instructions and the answer holds the text whole, not the two together
        ("zzz", []),
    ],
)
def test_the_text_filter_finds_a_substring_in_any_case(records, either_way, text, expected):
    """text: a substring of a run's instructions or answer, in any case, its characters taken literally."""
    recorded_texts(records)
    assert [r.run_id for r in records.runs(GetRunsInput(limit=10, text=text)).runs] == expected


def test_the_text_filter_follows_the_runs(records, either_way):
    """An answer recorded when the run ends is found; a run deleted by retention is not any more."""
    records.run_started(row("r1", started=time.time(), instructions="bounce the uplink"))
    assert [r.run_id for r in records.runs(GetRunsInput(text="UPLINK")).runs] == ["r1"]
    assert records.runs(GetRunsInput(text="flapped")).runs == []
    records.run_ended(ended("r1", response="the uplink flapped twice"), time.time())
    assert [r.run_id for r in records.runs(GetRunsInput(text="FLAPPED")).runs] == ["r1"]
    old = time.time() - 200 * 86400
    records.run_started(row("r0", started=old, instructions="an old uplink check"))
    records.run_ended(ended("r0", response="old answer"), old + 1)
    assert [r.run_id for r in records.runs(GetRunsInput(text="uplink")).runs] == ["r1", "r0"]
    records.prune()
    assert [r.run_id for r in records.runs(GetRunsInput(text="uplink")).runs] == ["r1"]
    assert records.runs(GetRunsInput(text="old answer")).runs == []
    if not records.shared:
        index_agrees_with_the_runs(records)


def test_the_text_filter_of_a_file_before_migration_0007_finds_its_runs(tmp_path, either_way):
    """A record an older worker wrote (no text index) is indexed when the worker opens it: its runs are found,
    and the runs recorded after."""
    records = Records(tmp_path, WORKER, RecordsSettings())
    recorded_texts(records)
    records.close()
    with sqlite3.connect(tmp_path / RECORDS_FILE) as db:  # as the file was before migration 0007
        db.executescript(
            "DROP TABLE runs_text; DROP TRIGGER runs_text_insert; "
            "DROP TRIGGER runs_text_delete; DROP TRIGGER runs_text_update;"
        )
        db.execute("UPDATE runs SET response = 'Gi0/2 is DOWN too' WHERE run_id = 'r1'")  # an older worker's write
    records = Records(tmp_path, WORKER, RecordsSettings())
    records.run_started(row("r4", instructions="check CORE-1 again"))
    assert [r.run_id for r in records.runs(GetRunsInput(text="core-1")).runs] == ["r4", "r1"]
    assert [r.run_id for r in records.runs(GetRunsInput(text="gi0/2")).runs] == ["r1"]
    assert records.runs(GetRunsInput(text="gi0/1")).runs == []
    index_agrees_with_the_runs(records)


def test_an_sqlite_without_the_trigram_tokenizer_keeps_its_record_and_reads_the_runs_for_a_text(
    tmp_path, monkeypatch, caplog
):
    """SQLite before 3.34 has no trigram tokenizer: the worker opens its record all the same, says so, and
    the text filter reads the runs."""
    shipped = schema_module.sqlite_migrations()
    without = [(n, name, script.replace("tokenize='trigram'", "tokenize='no_such'")) for n, name, script in shipped]
    monkeypatch.setattr(schema_module, "sqlite_migrations", lambda: without)
    records = Records(tmp_path, WORKER, RecordsSettings())
    recorded_texts(records)
    assert [r.run_id for r in records.runs(GetRunsInput(text="interfaces on core")).runs] == ["r1"]
    assert "cannot make runs_text" in caplog.text and "reading runs instead" in caplog.text
    with sqlite3.connect(tmp_path / RECORDS_FILE) as db:
        assert db.execute("SELECT name FROM sqlite_master WHERE name LIKE 'runs_text%'").fetchall() == []


def mergeable(path):
    """Whether the file's text index has segments to merge: FTS5's own 'merge' tried and rolled back (it
    counts fewer than two changes when a merge finds nothing: no level holds 'usermerge' segments)."""
    db = sqlite3.connect(path, isolation_level=None, timeout=10)
    try:
        db.execute("BEGIN IMMEDIATE")
        before = db.total_changes
        db.execute("INSERT INTO runs_text (runs_text, rank) VALUES ('merge', 32)")
        return db.total_changes - before >= 2
    finally:
        db.execute("ROLLBACK")
        db.close()


def merges_running(worker=WORKER):
    return [thread for thread in threading.enumerate() if thread.name == f"{worker}-text-merges"]


def test_the_runs_writes_leave_the_text_index_to_its_merges_thread(tmp_path):
    """A run's start and end merge nothing of the text index (a merge held the write lock for hundreds of
    milliseconds at a million runs): its thread merges what they leave, and the text filter finds the runs."""
    records = Records(tmp_path, WORKER, RecordsSettings())
    records.text.close()  # its thread stopped: what the writes alone leave
    for n in range(50):
        records.run_started(row(f"r{n}", instructions=f"check uplink-{n} on core-{n % 7}"))
        records.run_ended(ended(f"r{n}", response=f"uplink-{n} FLAPPED at 02:{n:02d}"), time.time())
    records.close()
    path = tmp_path / RECORDS_FILE
    assert mergeable(path)  # FTS5's automerge would have merged them as they were written

    others = set(merges_running())  # other tests' records left open
    records = Records(tmp_path, WORKER, RecordsSettings())  # its thread merges at the open, then after writes
    for _ in range(200):
        if not mergeable(path):
            break
        time.sleep(0.05)
    assert not mergeable(path)
    records.run_started(row("r50", instructions="check uplink-50"))
    uplink_4 = [f"r{n}" for n in (*range(49, 39, -1), 4)]  # uplink-4 and uplink-40 to 49
    assert [r.run_id for r in records.runs(GetRunsInput(text="UPLINK-4")).runs] == uplink_4
    assert [r.run_id for r in records.runs(GetRunsInput(text="flapped at 02:07")).runs] == ["r7"]
    index_agrees_with_the_runs(records)
    assert set(merges_running()) - others
    records.close()
    assert set(merges_running()) - others == set()


def test_a_text_index_an_older_worker_merged_as_it_wrote_is_merged_by_the_thread_after(tmp_path):
    """A file whose index still merges as it is written (FTS5's defaults, before this worker: automerge 4,
    a write's crisis merge at 16 segments) is switched over when the worker opens it."""
    Records(tmp_path, WORKER, RecordsSettings()).close()
    with sqlite3.connect(tmp_path / RECORDS_FILE) as db:
        db.execute("INSERT INTO runs_text (runs_text, rank) VALUES ('automerge', 4)")
        db.execute("INSERT INTO runs_text (runs_text, rank) VALUES ('crisismerge', 16)")
    records = Records(tmp_path, WORKER, RecordsSettings())
    with records.db.reading() as db:
        config = dict(db.execute("SELECT k, v FROM runs_text_config WHERE k IN ('automerge', 'crisismerge')"))
    assert config == {"automerge": 0, "crisismerge": 200}
    records.close()


def test_a_prune_merges_the_text_index_its_deletions_write_as_it_goes(tmp_path, monkeypatch):
    """Between two of its transactions the prune merges the text index itself: its deletions write the index's
    largest segments, and left to the thread (which merges the level of the most, the runs' small ones) they
    piled up until a run's write met them in a crisis merge. The index still agrees with the runs."""
    monkeypatch.setattr(retention_module, "PRUNE_BATCH", 10)
    records = Records(tmp_path, WORKER, RecordsSettings(keep_days=1))
    records.retention.pruned = time.time()  # the runs ending here start no prune of their own
    old = time.time() - 3 * 86400
    for n in range(60):
        records.run_started(row(f"o{n}", started=old + n, instructions=f"check uplink-{n} on core-{n % 7}"))
        records.run_ended(ended(f"o{n}", response=f"uplink-{n} FLAPPED"), old + n + 1)
    records.run_started(row("new", instructions="check uplink-new"))
    made = []  # the prune's statements, in order (the merges thread's are its own)
    records.db._db.set_trace_callback(
        lambda sql: made.append(sql) if threading.current_thread() is threading.main_thread() else None
    )
    records.prune()
    records.db._db.set_trace_callback(None)
    transactions = " ".join(made).split("BEGIN IMMEDIATE")[1:]
    kinds = [
        "delete" if "DELETE FROM runs " in t else "merge" if "VALUES ('merge'" in t else "other" for t in transactions
    ]
    deletes = [at for at, kind in enumerate(kinds) if kind == "delete"]
    assert len(deletes) >= 6, kinds
    assert all(kinds[at + 1] == "merge" for at in deletes[:-1]), kinds  # none after the last: the prune moves on
    assert [r.run_id for r in records.runs(GetRunsInput(text="uplink")).runs] == ["new"]
    index_agrees_with_the_runs(records)
    records.close()


def index_agrees_with_the_runs(records):
    with records.db.reading() as db:  # FTS5 raises when its index and the runs it indexes disagree
        db.execute("INSERT INTO runs_text (runs_text, rank) VALUES ('integrity-check', 1)")


def made(model, digest):
    return Provenance(
        model=model, provider="custom", hermes_version="0.19.0", norfab_hermes_version="0.1.0", definition_digest=digest
    )


def test_a_run_of_a_case_names_it_and_its_provenance_in_every_record(records):
    """The run record, its summary and every audit entry of the run name the case; run.started its provenance."""
    provenance = made("alpha-model", "d-alpha")
    records.run_started(row("r1", case_id="INC-1", provenance=provenance))
    records.tool_call("alpha", "r1", [call()])
    records.approval(approval(), "requested")
    records.run_ended(ended("r1"), time.time())
    records.run_started(row("r2"))
    state, [summary] = records.run_state("r1"), records.runs(GetRunsInput(limit=10, case_id="INC-1")).runs
    assert (state.case_id, state.provenance) == (summary.case_id, summary.provenance) == ("INC-1", provenance)
    entries = records.audit_page(0, 100, run_id="r1").entries
    assert [e.kind for e in entries] == ["run.started", "tool.call", "approval.requested", "run.ended"]
    assert all(e.data["case_id"] == "INC-1" for e in entries)
    assert entries[0].data["provenance"] == provenance.model_dump()
    [other] = records.audit_page(0, 100, run_id="r2").entries
    assert "case_id" not in other.data
    assert records.verify().ok


def test_a_kinds_newest_audit_entries_come_first_in_pages_back_and_through_the_kind_index(records):
    """get_audit newest_first: a kind's last entries, newest first, paged back with next_before, without a
    walk of the log (the audit_kind index); after still bounds it below."""
    for n in range(5):
        records.run_started(row(f"r{n}"))
        decided = approval(
            f"a{n}", f"r{n}", state="approved", decided_by="lead", decided="2026-12-01T02:01:00.000+00:00"
        )
        records.approval(decided, "decided", "lead")
    seqs = [e.seq for e in records.audit_page(0, 100, kind="approval.decided").entries]
    page = records.audit_page(0, 2, kind="approval.decided", newest_first=True)
    assert ([e.seq for e in page.entries], page.next_before, page.next_after) == (seqs[:-3:-1], seqs[-2], None)
    older = records.audit_page(0, 2, kind="approval.decided", newest_first=True, before=page.next_before)
    assert [e.seq for e in older.entries] == [seqs[2], seqs[1]]
    assert [e.seq for e in records.audit_page(seqs[3], 50, kind="approval.decided", newest_first=True).entries] == [
        seqs[4]
    ]
    db = sqlite3.connect(records.db.path)
    plan = db.execute(
        "EXPLAIN QUERY PLAN SELECT seq FROM audit WHERE seq > 0 AND kind = ? AND time >= ? ORDER BY seq DESC LIMIT 51",
        ("approval.decided", "2026-12-01"),
    ).fetchall()
    assert "audit_kind" in str(plan)


# the runs table as norfab-hermes 0.1.0 wrote it, before runs carried their case and provenance
V1_RUNS = """
CREATE TABLE runs (
    run_id TEXT PRIMARY KEY, agent TEXT NOT NULL, worker TEXT NOT NULL, state TEXT NOT NULL, stop_reason TEXT,
    started REAL NOT NULL, finished REAL, session_id TEXT, schedule_id TEXT, job_uuid TEXT, client TEXT,
    dedupe_key TEXT, parent_run_id TEXT, instructions TEXT NOT NULL, response TEXT NOT NULL DEFAULT '',
    tool_calls INTEGER NOT NULL DEFAULT 0, calls_so_far TEXT, api_calls INTEGER NOT NULL DEFAULT 0,
    input_tokens INTEGER NOT NULL DEFAULT 0, output_tokens INTEGER NOT NULL DEFAULT 0,
    total_tokens INTEGER NOT NULL DEFAULT 0, cost_usd REAL
);
INSERT INTO runs (run_id, agent, worker, state, started, instructions) VALUES ('old', 'alpha', 'w1', 'finished', 1000.0, 'x');
PRAGMA user_version = 1;
"""


def test_a_records_file_of_the_previous_version_is_upgraded_in_place(tmp_path):
    """A worker upgraded in place keeps its runs: they have no case or provenance, new runs do."""
    with sqlite3.connect(tmp_path / RECORDS_FILE) as db:
        db.executescript(V1_RUNS)
    records = Records(tmp_path, WORKER, RecordsSettings())
    records.run_started(row("new", case_id="INC-1", provenance=made("alpha-model", "d-alpha")))
    old = records.run_state("old")
    assert (old.instructions, old.case_id, old.provenance) == ("x", None, None)
    assert [r.run_id for r in records.runs(GetRunsInput(limit=10, case_id="INC-1")).runs] == ["new"]
    assert [r.run_id for r in records.runs(GetRunsInput(limit=10)).runs] == ["new", "old"]
    with records.db.reading() as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == 2


def test_runs_come_in_pages(records):
    """A page says how many match and where the next page starts; the last page has no next."""
    for n in range(5):
        records.run_started(row(f"r{n}", started=1000.0 + n))
    first, last = records.runs(GetRunsInput(limit=2)), records.runs(GetRunsInput(limit=2, offset=4))
    assert ([r.run_id for r in first.runs], first.total, first.next_offset) == (["r4", "r3"], 5, 2)
    assert ([r.run_id for r in last.runs], last.next_offset) == (["r0"], None)


def test_a_dedupe_key_finds_the_run_within_its_window(records):
    """The run an agent started with a key is found while it is younger than the window asked."""
    records.run_started(row("r1", started=1000.0, dedupe_key="INC-1"))
    assert records.deduplicate("alpha", "INC-1", since=900.0) == "r1"
    assert records.deduplicate("alpha", "INC-1", since=1001.0) is None
    assert records.deduplicate("beta", "INC-1", since=900.0) is None


def test_the_daily_usage_adds_up_per_agent_and_day(records):
    """Usage adds per (agent, day) and answers the day's totals."""
    assert records.add_usage("alpha", "2026-12-01", 100, 0.5) == (100, 0.5)
    assert records.add_usage("alpha", "2026-12-01", 50, 0.25) == (150, 0.75)
    assert records.spent("alpha", "2026-12-02") == (0, 0.0)
    assert records.spent("beta", "2026-12-01") == (0, 0.0)


def test_retention_deletes_old_runs_and_keeps_the_newest_count(tmp_path):
    """Finished runs past keep_days go, then the oldest beyond keep_runs; runs in flight stay; the log still verifies."""
    records = Records(tmp_path, WORKER, RecordsSettings(keep_days=1, keep_runs=2))
    old = time.time() - 3 * 86400
    for n, started in enumerate([old, old, time.time(), time.time() + 1, time.time() + 2]):
        records.run_started(row(f"r{n}", started=started))
        if n != 1:  # r1 is still in flight
            records.run_ended(ended(f"r{n}"), started + 1)
    records.approval(approval(run_id="r0", state="approved"), "decided")
    records.prune()
    assert sorted(r.run_id for r in records.runs(GetRunsInput(limit=10)).runs) == ["r1", "r3", "r4"]
    assert records.approval_info("a1") is None, "the approvals of deleted runs go with them"
    assert records.verify().ok


def test_a_prune_beside_a_writer_that_never_pauses_keeps_the_wal_shorter_than_the_file(tmp_path):
    """The WAL starts over between the prune's transactions although runs are recorded all along: it never
    holds every page the prune writes (which grew it past the whole file, and took seconds to cut back)."""
    records = Records(tmp_path, WORKER, RecordsSettings(keep_days=1))
    old = time.time() - 3 * 86400
    for n in range(3000):
        records.run_started(row(f"o{n}", started=old + n))
        records.run_ended(ended(f"o{n}", response=f"answer {n} " * 200), old + n + 1)
    file, wal = tmp_path / RECORDS_FILE, tmp_path / (RECORDS_FILE + "-wal")
    before, largest, done = file.stat().st_size, [0], threading.Event()

    def writer():
        n = 0
        while not done.is_set():
            records.run_started(row(f"n{n}"))
            records.run_ended(ended(f"n{n}"), time.time())
            largest[0] = max(largest[0], wal.stat().st_size)
            n += 1

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        records.prune()
    finally:
        done.set()
        thread.join()
    assert records.runs(GetRunsInput(limit=1, until="1d")).total == 0, "the old runs went"
    assert 0 < largest[0] < before, f"the WAL grew to {largest[0]} bytes; the file was {before} bytes"
    assert wal.stat().st_size < before / 10, "the WAL was cut back at the end"


def test_a_prune_whose_transactions_take_long_deletes_fewer_rows_in_each_and_still_all(tmp_path, monkeypatch):
    """A batch slower than PRUNE_HOLD makes the next smaller (down to one row): every old run still goes."""
    records = Records(tmp_path, WORKER, RecordsSettings(keep_days=1))
    records.retention.pruned = time.time()  # the runs ending here start no prune of their own
    old = time.time() - 3 * 86400
    for n in range(12):
        records.run_started(row(f"o{n}", started=old + n))
        records.run_ended(ended(f"o{n}"), old + n + 1)
    records.run_started(row("new"))
    records.run_ended(ended("new"), time.time())
    sizes = []
    prune = runs_module.prune
    monkeypatch.setattr(runs_module, "prune", lambda db, through, size: sizes.append(size) or prune(db, through, size))
    monkeypatch.setattr(retention_module, "PRUNE_BATCH", 5)
    monkeypatch.setattr(retention_module, "PRUNE_HOLD", 1e-9)  # every batch takes longer
    records.prune()
    assert sizes == [5] + [1] * 8, sizes  # 5, then one a time: 7 more, and the one that found none
    assert [r.run_id for r in records.runs(GetRunsInput(limit=20)).runs] == ["new"]
    assert records.verify().ok


def test_pruning_runs_at_most_hourly(records, monkeypatch):
    """Ending runs checks retention at most once an interval."""
    pruned = []
    monkeypatch.setattr(records.retention, "prune", lambda: pruned.append(1))
    records.retention.pruned = time.time()
    records.retention.now_and_then()
    monkeypatch.setattr(retention_module, "PRUNE_INTERVAL", 0.0)
    records.retention.now_and_then()
    assert pruned == [1]


def test_a_proof_nonce_is_taken_once_per_worker_and_job_and_forgotten_when_it_expires(tmp_path):
    """One job to two workers of one record takes the proof once each; a replay as another job is refused."""
    w1 = Records(tmp_path, "w1", RecordsSettings())
    w2 = Records(tmp_path, "w2", RecordsSettings())  # the same file: a record the two share
    now = time.time()
    assert w1.first_use("n1", "J1", now + 60, now) is None
    assert w2.first_use("n1", "J1", now + 60, now) is None, "the fan-out's other worker"
    assert "used already (replayed)" in w1.first_use("n1", "J1", now + 60, now)
    assert "used already by worker 'w1' for another job" in Records(tmp_path, "w3", RecordsSettings()).first_use(
        "n1", "J2", now + 60, now
    )
    assert w1.first_use("n2", "J3", now + 1, now) is None
    w1._nonces_pruned = 0.0
    assert w1.first_use("n3", "J4", now + 60, now + 2) is None
    with sqlite3.connect(tmp_path / RECORDS_FILE) as db:
        assert {n for (n,) in db.execute("SELECT nonce FROM proof_nonces")} == {"n1", "n3"}, "n2 expired and went"
