"""
A worker's SQLite record and the fleet's PostgreSQL record each holding a million runs (issue 34, issue
"Scale"): get_runs with each documented filter, verify_audit over the chain, and a retention prune while
runs are being written (the latency of each write and of each run's writes during it), and the SQLite file's
bytes per run. Each record is
filled directly through the store's own schema (one audit entry per run, a year of start times, a spread of
agents, states, stop reasons, cases, schedules, deciders and texts): SQLite by inserts, PostgreSQL by COPY
with its indexes made after. NORFAB_HERMES_BENCH_MILLION_RUNS sets the size (default 1,000,000);
NORFAB_HERMES_BENCH_MILLION_PG_RUNS PostgreSQL's (default: the same); 0 leaves either out.
"""

import os
import random
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterator, List, Tuple

from bench_records import one_run
from common import WORKER, median, meets, p95, p99, row, timed

from norfab_hermes.models import GetRunsInput, RecordsSettings
from norfab_hermes.testing.postgres import postgres_server, server_binaries
from norfab_hermes.worker.records import audit
from norfab_hermes.worker.records.db import RECORDS_FILE
from norfab_hermes.worker.records.runs import iso
from norfab_hermes.worker.records.store import Records

SIZE_ENV = "NORFAB_HERMES_BENCH_MILLION_RUNS"
PG_SIZE_ENV = "NORFAB_HERMES_BENCH_MILLION_PG_RUNS"
PG_ENV = "NORFAB_HERMES_BENCH_MILLION_PG_DSN"
YEAR = 365 * 86400
AGENTS = [f"agent-{n}" for n in range(40)]
STOPS = ["completed", "completed", "completed", "interrupted", "token_budget", "tool_budget", "error", "timeout"]
DECIDERS = [f"noc-{n}" for n in range(20)]
BATCH = 20_000
ANCHOR = 30.0  # seconds a writer records runs before the prune: the anchor of its latencies
QUERY, VERIFY, BLOCKED = (
    "<= 100 ms",
    "<= 30 s",
    "<= 100 ms",
)  # issue 34: get_runs, verify_audit, a write during the prune


@dataclass
class Latencies:
    """A writer's: each run's recording (its writes one after another), and each write's (a run makes them apart,
    as its steps happen: what a run waits for at once; with the fleet's record, the move of a run's writes)."""

    runs: List[float] = field(default_factory=list)
    writes: List[float] = field(default_factory=list)


def _runs(total: int, now: float) -> Iterator[Tuple[Any, ...]]:
    rng = random.Random(34)
    for n in range(total):
        started = now - YEAR + YEAR * n / total
        live = n >= total - 20  # the newest few are still in flight
        yield (
            f"{n:012x}",
            rng.choice(AGENTS),
            WORKER,
            rng.choice(["running", "queued", "waiting_for_approval"]) if live else "finished",
            None if live else rng.choice(STOPS),
            started,
            None if live else started + rng.uniform(1, 120),
            f"sched-{n % 2000}" if n % 5 == 0 else None,
            f"INC-{n % 50_000}" if n % 3 == 0 else None,
            f"Check interfaces on r{n % 500}: users report loss on site {rng.randrange(10_000)}",
            "" if live else f"r{n % 500} Gi0/{n % 48} is down since 02:10 (line protocol down)",
            "alpha-model" if n % 2 else "beta-model",
        )


RUN_COLUMNS = (
    "run_id, agent, worker, state, stop_reason, started, finished, schedule_id, case_id, instructions, response, model"
)
APPROVAL_COLUMNS = "approval_id, run_id, agent, state, requested, decided_by, info"


def batches(total: int) -> Iterator[Tuple[List[Tuple[Any, ...]], List[Tuple[Any, ...]], List[Tuple[Any, ...]]]]:
    """``total`` runs in batches: (runs, approvals: one for every tenth run, audit entries: one per run, chained)."""
    now = time.time()
    head = (0, audit.GENESIS)
    rows = _runs(total, now)
    for start in range(0, total, BATCH):
        batch = [next(rows) for _ in range(min(BATCH, total - start))]
        entries = []
        for values in batch:
            made = audit.entry(head, WORKER, "run.started", values[1], values[0], data={"n": 1}, at=iso(values[5]))
            head = (made[0], made[-1])
            entries.append(made)
        asked = [
            (f"a{v[0]}", v[0], v[1], "approved", iso(v[5]), DECIDERS[((start + i) // 10) % 20], "{}")
            for i, v in enumerate(batch)
            if i % 10 == 0
        ]
        yield batch, asked, entries


def fill(records: Records, total: int) -> None:
    """``total`` runs, one approval for every tenth, one audit entry each (chained) through the store's tables."""
    for batch, asked, entries in batches(total):
        with records.db.transaction() as db:
            db.executemany(f"INSERT INTO runs ({RUN_COLUMNS}) VALUES ({', '.join('?' * 12)})", batch)
            db.executemany(f"INSERT INTO approvals ({APPROVAL_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)", asked)
            db.executemany(f"INSERT INTO audit ({audit.COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", entries)
            last = entries[-1]
            audit.set_anchor(db, "head", last[0], last[-1])


def fill_postgresql(dsn: str, total: int) -> None:
    """``fill`` by COPY into the migrated schema, its indexes dropped meanwhile and made again after (as
    the migrations define them)."""
    import psycopg

    tables = ("runs", "approvals", "audit")
    with psycopg.connect(dsn, autocommit=True) as db:
        made = db.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = ANY(%s) AND indexname NOT LIKE '%%_pkey'",
            [list(tables)],
        ).fetchall()
        for name, _ in made:
            db.execute(f"DROP INDEX {name}")
        last: Any = None
        for batch, asked, entries in batches(total):
            with db.transaction(), db.cursor() as cursor:
                for table, columns, rows in (
                    ("runs", RUN_COLUMNS, batch),
                    ("approvals", APPROVAL_COLUMNS, asked),
                    ("audit", audit.COLUMNS, entries),
                ):
                    with cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
                        for values in rows:
                            copy.write_row(values)
            last = entries[-1]
        db.execute("SET maintenance_work_mem = '256MB'")
        for _, definition in made:
            db.execute(definition)
        db.execute(
            "INSERT INTO audit_anchor (name, seq, hash) VALUES ('head', %s, %s) "
            "ON CONFLICT (name) DO UPDATE SET seq = excluded.seq, hash = excluded.hash",
            [last[0], last[-1]],
        )
        db.execute("VACUUM ANALYZE")


FILTERS: Dict[str, Dict[str, Any]] = {
    "no filter": {},
    "agent": {"agent": "agent-7"},
    "state": {"state": "running"},
    "stop_reason": {"stop_reason": "token_budget"},
    "since 7d": {"since": "7d"},
    "until 300d ago": {"until": "300d"},
    "schedule_id": {"schedule_id": "sched-15"},
    "decided_by": {"decided_by": "noc-3"},
    "text": {"text": "site 4242"},
    "case_id": {"case_id": "INC-123"},
    "model": {"model": "beta-model"},
    "agent + since 30d + text": {"agent": "agent-7", "since": "30d", "text": "r42"},
}


def prune_while_writing(records: Records) -> Tuple[float, Latencies, Latencies, int]:
    """The prune's duration; the recording latencies (a writer thread, one run after another) first for ANCHOR
    seconds without a prune (what this machine's disk gives any write), then during the prune; and the largest
    the SQLite record's WAL file grew to meanwhile (bytes; 0 for PostgreSQL's)."""
    alone, during = Latencies(), Latencies()
    phase: List[Any] = [None]  # the latencies the writer's go to now, if any
    done = threading.Event()
    wal = None if records.db.shared else Path(str(records.db.path) + "-wal")
    largest = [0]

    def writer() -> None:
        n = 10**9
        while not done.is_set():
            latencies = phase[0]
            started = time.perf_counter()
            writes: List[float] = []
            one_run(records, n, writes=writes)
            if records.outbox is not None:  # the fleet's record: until it holds the run's writes, in one move
                with records._order:
                    records.outbox.catch_up()
                writes = [time.perf_counter() - started]
            if latencies is not None:
                latencies.runs.append(time.perf_counter() - started)
                latencies.writes.extend(writes)
            if latencies is during and wal is not None and wal.exists():
                largest[0] = max(largest[0], wal.stat().st_size)
            n += 1

    # the writer's runs ending do not start a prune of their own: this one is timed
    records.retention.pruned = time.time()
    thread = threading.Thread(target=writer)
    thread.start()
    time.sleep(0.5)
    phase[0] = alone
    time.sleep(ANCHOR)
    phase[0] = during
    started = time.perf_counter()
    records.prune()
    took = time.perf_counter() - started
    done.set()
    thread.join()
    return took, alone, during, largest[0]


def measure(records: Records, total: int, backend: str, filled: float, how: str) -> List[Dict[str, Any]]:
    """The rows of one filled record (``backend``: the metrics' prefix; the SQLite record's have none, as
    before PostgreSQL's were measured): each filter, verify_audit, the prune while a writer records runs."""
    rows = [row("million", f"{backend}fill {total} runs", filled, "s", how)]
    for name, filters in FILTERS.items():
        query = GetRunsInput(**filters)
        took = 1000 * min(timed(lambda: records.runs(query)) for _ in range(3))
        note = f"{records.runs(query).total} match; best of 3"
        rows.append(
            row("million", f"{backend}get_runs {name}, {total} runs", took, "ms", note, QUERY, meets(took, QUERY))
        )
    started = time.perf_counter()
    verified = records.verify()
    took = time.perf_counter() - started
    assert verified.ok, verified.problems
    rows.append(
        row(
            "million",
            f"{backend}verify_audit, {verified.entries} entries",
            took,
            "s",
            "",
            VERIFY,
            meets(took, VERIFY),
        )
    )
    before = records.runs().total
    took, alone, during, wal = prune_while_writing(records)
    gone = before + len(alone.runs) + len(during.runs) - records.runs().total
    rows.append(
        row(
            "million",
            f"{backend}retention prune (half the year)",
            took,
            "s",
            f"{gone} runs deleted while a writer records runs",
        )
    )
    fleet = records.outbox is not None
    recorded = "until the record holds its writes" if fleet else "its 8 writes one after another"
    rows.append(
        row(
            "million",
            f"{backend}run recording without a prune (anchor), p99",
            1000 * p99(alone.runs or [0]),
            "ms",
            f"{len(alone.runs)} runs in {ANCHOR:.0f} s ({recorded}); median {median(alone.runs or [0]) * 1000:.1f} "
            f"ms, worst {1000 * max(alone.runs or [0]):.0f} ms",
        )
    )
    spread = (
        f"{len(during.runs)} runs ({recorded}); median {median(during.runs or [0]) * 1000:.1f} ms, "
        f"p95 {p95(during.runs or [0]) * 1000:.1f} ms, {sum(x > 0.1 for x in during.runs)} over 100 ms"
        + (f"; the WAL file {wal / 2**20:.0f} MiB at most" if wal else "")
    )
    during_p99 = 1000 * p99(during.runs or [0])
    rows.append(
        row(
            "million",
            f"{backend}run recording during the prune, p99",
            during_p99,
            "ms",
            spread + "; the target: not blocked",
            BLOCKED,
            meets(during_p99, BLOCKED),
        )
    )
    if not fleet:  # a run's writes one after another, as no run makes them: what a run waits for is one of them
        rows.append(
            row(
                "million",
                f"{backend}run recording during the prune, worst",
                1000 * max(during.runs or [0]),
                "ms",
                "its 8 writes one after another (a run makes them apart): the target is a write's, below",
            )
        )
    stalls = 1000 * max(alone.writes or [0])  # the anchor: this machine's disk, without a prune
    worst = 1000 * max(during.writes or [0])
    shows = meets(stalls, BLOCKED)  # a write stalls that long here without a prune: no prune can be shown under it
    one = "the move of a run's writes" if fleet else "each of a run's"
    spread = (
        f"{len(during.writes)} writes ({one}), {sum(x > 0.1 for x in during.writes)} over 100 ms; p99 "
        f"{1000 * p99(during.writes or [0]):.1f} ms; without a prune (anchor) p99 {1000 * p99(alone.writes or [0]):.1f}"
        f" ms, worst {stalls:.0f} ms"
    )
    cannot = f"; a write without a prune took up to {stalls:.0f} ms here: this machine cannot show {BLOCKED}"
    rows.append(
        row(
            "million",
            f"{backend}a write during the prune, worst",
            worst,
            "ms",
            spread + ("" if shows else cannot),
            BLOCKED,
            meets(worst, BLOCKED) if shows else None,
        )
    )
    return rows


def settings(total: int, **backend: Any) -> RecordsSettings:
    # keep_days 180: the prune deletes about half the year
    return RecordsSettings(keep_days=180, keep_runs=10 * total, keep_audit=10 * total, **backend)


def sqlite(total: int) -> List[Dict[str, Any]]:
    with tempfile.TemporaryDirectory() as tmp:
        records = Records(Path(tmp), WORKER, settings(total))
        started = time.perf_counter()
        fill(records, total)
        filled = time.perf_counter() - started
        with records.db.reading() as db:
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            index = db.execute("SELECT coalesce(sum(pgsize), 0) FROM dbstat WHERE name LIKE 'runs_text%'").fetchone()
        size = (Path(tmp) / RECORDS_FILE).stat().st_size
        rows = measure(records, total, "", filled, "direct bulk insert")
        note = (
            f"one audit entry and a tenth of an approval each, no run details; of it the text index (migration "
            f"0007) {index[0] / total:.0f} B: {(size - index[0]) / total:.0f} B without"
        )
        rows.insert(1, row("million", "record file per run", size / total, "B", note))
        records.close()
    return rows


def postgresql(total: int) -> List[Dict[str, Any]]:
    with postgres_server(durable=True) as dsn:
        os.environ[PG_ENV] = dsn
        with tempfile.TemporaryDirectory() as tmp:
            records = Records(Path(tmp), WORKER, settings(total, backend="postgresql", dsn_env=PG_ENV))
            started = time.perf_counter()
            fill_postgresql(dsn, total)
            how = "COPY, then the indexes and VACUUM ANALYZE; fsync on"
            rows = measure(records, total, "PostgreSQL ", time.perf_counter() - started, how)
            records.close()
    return rows


def run(url: str) -> List[Dict[str, Any]]:
    total = int(os.environ.get(SIZE_ENV, "1000000"))
    pg_total = int(os.environ.get(PG_SIZE_ENV, str(total)))
    rows = sqlite(total) if total else []
    if pg_total and server_binaries() is not None:
        rows += postgresql(pg_total)
    return rows


if __name__ == "__main__":
    for found in run(""):
        print(found)
