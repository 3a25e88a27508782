"""
A worker's SQLite record holding a million runs (issue 34): get_runs with each documented filter,
verify_audit over the chain, and a retention prune while runs are being written (the writers' latency
during it). The record is filled directly through the store's own schema (one audit entry per run, a
year of start times, a spread of agents, states, stop reasons, cases, schedules, deciders and texts).
NORFAB_HERMES_BENCH_MILLION_RUNS sets the size (default 1,000,000; ``make bench-quick`` may set less).
"""

import os
import random
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Dict, Iterator, List, Tuple

from bench_records import one_run
from common import WORKER, median, meets, p95, row, timed

from norfab_hermes.models import GetRunsInput, RecordsSettings
from norfab_hermes.worker.records import audit
from norfab_hermes.worker.records.runs import iso
from norfab_hermes.worker.records.store import Records

SIZE_ENV = "NORFAB_HERMES_BENCH_MILLION_RUNS"
YEAR = 365 * 86400
AGENTS = [f"agent-{n}" for n in range(40)]
STOPS = ["completed", "completed", "completed", "interrupted", "token_budget", "tool_budget", "error", "timeout"]
DECIDERS = [f"noc-{n}" for n in range(20)]
BATCH = 20_000
QUERY, VERIFY, BLOCKED = (
    "<= 100 ms",
    "<= 30 s",
    "<= 100 ms",
)  # issue 34: get_runs, verify_audit, a write during the prune


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


def fill(records: Records, total: int) -> None:
    """``total`` runs, one approval for every tenth, one audit entry each (chained) through the store's tables."""
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
        with records.db.transaction() as db:
            db.executemany(
                "INSERT INTO runs (run_id, agent, worker, state, stop_reason, started, finished, schedule_id, "
                "case_id, instructions, response, model) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                batch,
            )
            db.executemany(
                "INSERT INTO approvals (approval_id, run_id, agent, state, requested, decided_by, info) "
                "VALUES (?, ?, ?, 'approved', ?, ?, '{}')",
                [
                    (f"a{v[0]}", v[0], v[1], iso(v[5]), DECIDERS[(i // 10) % 20])
                    for i, v in enumerate(batch)
                    if i % 10 == 0
                ],
            )
            db.executemany(f"INSERT INTO audit ({audit.COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", entries)
            audit.set_anchor(db, "head", *head)


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


def prune_while_writing(records: Records) -> Tuple[float, List[float]]:
    """The prune's duration and each run's recording latency meanwhile (a writer thread, one run after another)."""
    latencies: List[float] = []
    pruning = threading.Event()
    done = threading.Event()

    def writer() -> None:
        n = 10**9
        while not done.is_set():
            started = time.perf_counter()
            one_run(records, n)
            if pruning.is_set():
                latencies.append(time.perf_counter() - started)
            n += 1

    records._pruned = time.time()  # the writer's runs ending do not start a prune of their own: this one is timed
    thread = threading.Thread(target=writer)
    thread.start()
    time.sleep(0.5)
    pruning.set()
    started = time.perf_counter()
    records.prune()
    took = time.perf_counter() - started
    done.set()
    thread.join()
    return took, latencies


def run(url: str) -> List[Dict[str, Any]]:
    total = int(os.environ.get(SIZE_ENV, "1000000"))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        # keep_days 180: the prune deletes about half the year
        records = Records(
            Path(tmp), WORKER, RecordsSettings(keep_days=180, keep_runs=10 * total, keep_audit=10 * total)
        )
        started = time.perf_counter()
        fill(records, total)
        rows.append(row("million", f"fill {total} runs", time.perf_counter() - started, "s", "direct bulk insert"))
        for name, filters in FILTERS.items():
            query = GetRunsInput(**filters)
            took = 1000 * min(timed(lambda: records.runs(query)) for _ in range(3))
            note = f"{records.runs(query).total} match; best of 3"
            rows.append(row("million", f"get_runs {name}, {total} runs", took, "ms", note, QUERY, meets(took, QUERY)))
        started = time.perf_counter()
        verified = records.verify()
        took = time.perf_counter() - started
        assert verified.ok, verified.problems
        rows.append(
            row("million", f"verify_audit, {verified.entries} entries", took, "s", "", VERIFY, meets(took, VERIFY))
        )
        before = records.runs().total
        took, latencies = prune_while_writing(records)
        gone = before + len(latencies) - records.runs().total
        rows.append(
            row(
                "million",
                "retention prune (half the year)",
                took,
                "s",
                f"{gone} runs deleted while a writer records runs",
            )
        )
        worst = max(latencies) if latencies else 0.0
        note = (
            f"{len(latencies)} runs; median {median(latencies or [0]) * 1000:.1f} ms, "
            f"p95 {p95(latencies or [0]) * 1000:.1f} ms; the target: not blocked"
        )
        worst *= 1000
        rows.append(
            row("million", "run recording during the prune, worst", worst, "ms", note, BLOCKED, meets(worst, BLOCKED))
        )
        records.close()
    return rows


if __name__ == "__main__":
    for found in run(""):
        print(found)
