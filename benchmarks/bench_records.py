"""
The worker's records: how much the run records and audit log grow per 1,000 runs and what recording
costs a run, measured on the records themselves (a typical run: accepted, running, three tool calls,
one approval asked and decided, ended with its events and answer) and on real invokes through NorFab;
how long get_runs and verify_audit take on a worker with 10,000 runs; and, on a PostgreSQL server
started for the run (fsync on, 127.0.0.1), what recording the same run costs in the fleet's record
(on the run's thread; per run until the record holds them all; how soon another worker sees a run
start) and what taking and releasing a device lock across workers costs.
"""

import os
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

import psycopg
from common import WORKER, invoke, median, meets, p95, row, timed, worker

from norfab_hermes.models import (
    ApprovalInfo,
    GetRunsInput,
    InvokeResultData,
    RecordsSettings,
    RunEvent,
    RunStateData,
    RunUsage,
    ToolCallSummary,
)
from norfab_hermes.testing.embedded import running_norfab
from norfab_hermes.testing.postgres import postgres_server
from norfab_hermes.worker.changes.locks import FleetDeviceLocks, Holder
from norfab_hermes.worker.records import runs
from norfab_hermes.worker.records.db import RECORDS_FILE
from norfab_hermes.worker.records.runs import RunRow
from norfab_hermes.worker.records.store import Records

RUNS = 10_000
REAL_RUNS = 100
PG_RUNS = 2_000
CHANGE_RUNS = 500
SEEN_RUNS = 200
LOCKS = 1_000
PG_ENV = "NORFAB_HERMES_BENCH_PG_DSN"
ANSWER = "r1 Gi0/1 is down since 02:10 (line protocol down, 412 input errors); Gi0/2 and Gi0/3 are up. " * 8
# issue 34: sizes per run as they were or smaller (benchmarks/baseline/2026-12-02.json: 5.688 and 1.953 MiB)
STORAGE, REAL_STORAGE = "<= 5.688 MiB", "<= 1.953 MiB"


def size(folder: Path) -> int:
    """Bytes of the records database, its WAL folded in first (as the worker does now and then)."""
    with sqlite3.connect(folder / RECORDS_FILE) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return sum(path.stat().st_size for path in folder.glob(RECORDS_FILE + "*"))


def one_run(records: Records, n: int, change: bool = False, writes: Optional[List[float]] = None) -> None:
    """What the worker records for one typical run (``change``: its approval is of a change, with its digest);
    ``writes``: each of its writes' latency appended (a run makes them apart, as its steps happen)."""
    run_id, started = f"{n:012x}", time.time()

    def write(step: Callable[..., None], *args: Any) -> None:
        took = time.perf_counter()
        step(*args)
        if writes is not None:
            writes.append(time.perf_counter() - took)

    write(
        records.run_started,
        RunRow(
            run_id,
            "interfaces",
            WORKER,
            started,
            f"Check interfaces on r{n % 50}: users report loss",
            client="noc-desk",
        ),
    )
    write(records.run_running, run_id, f"session-{n}")
    calls = []
    for c in range(3):
        calls.append(
            ToolCallSummary(
                tool="show_interfaces",
                service="nornir",
                task="cli",
                workers="any",
                arguments_digest=f"{c:012x}",
                job_uuid=f"{n:016x}{c:016x}",
                status="completed",
                duration=0.41,
            )
        )
        write(records.tool_call, "interfaces", run_id, calls)
    asked = ApprovalInfo(
        approval_id=f"a{n:011x}",
        run_id=run_id,
        agent="interfaces",
        worker=WORKER,
        tool="bounce",
        target="nornir.cli on any",
        arguments={"FB": f"r{n % 50}"},
        arguments_digest="9f3b2c1d0e4a",
        state="pending",
        requested="2026-12-01T02:10:00.000+00:00",
        expires="2026-12-01T02:20:00.000+00:00",
        change_digest="c4a1e2f0" if change else None,
        devices=[f"r{n % 50}"] if change else [],
    )
    write(records.approval, asked, "requested")
    decided = asked.model_copy(
        update={
            "state": "approved",
            "decided": "2026-12-01T02:11:00.000+00:00",
            "decided_by": "noc-lead",
            "note": "CHG-42",
        }
    )
    write(records.approval, decided, "decided", "noc-lead")
    events = [
        RunEvent(time="2026-12-01T02:10:00.000+00:00", message=f"tool show_interfaces completed, job {n:032x}")
        for _ in range(12)
    ]
    result = InvokeResultData(
        response=ANSWER,
        run_id=run_id,
        session_id=f"session-{n}",
        agent="interfaces",
        worker=WORKER,
        stop_reason="completed",
        tool_calls=calls,
        usage=RunUsage(api_calls=4, input_tokens=6000, output_tokens=400, total_tokens=6400),
        approvals=[decided],
    )
    state = RunStateData(
        run_id=run_id,
        agent="interfaces",
        worker=WORKER,
        session_id=f"session-{n}",
        state="finished",
        stop_reason="completed",
        started="2026-12-01T02:10:00.000+00:00",
        events=events,
        approvals=[decided],
        result=result,
        client="noc-desk",
    )
    write(records.run_ended, state, started + 5)


def synthetic() -> List[Dict[str, Any]]:
    folder = Path(tempfile.mkdtemp(prefix="bench-records-"))
    records = Records(folder, WORKER, RecordsSettings())
    took = []
    for n in range(RUNS):
        took.append(timed(lambda: one_run(records, n)))
    per_thousand = size(folder) / RUNS * 1000 / 2**20
    query = median(
        [
            timed(
                lambda: records.runs(
                    GetRunsInput(limit=50, agent="interfaces", text="r7:", since="2026-01-01T00:00:00+00:00")
                )
            )
            for _ in range(5)
        ]
    )
    verify = timed(records.verify)
    assert records.verify().ok
    note = "3 tool calls, 1 approval asked and decided, 12 events, a 760-character answer"
    return [
        row(
            "records",
            "storage per 1,000 runs",
            per_thousand,
            "MiB",
            f"{RUNS} runs of: {note}; audit log included",
            STORAGE,
            meets(per_thousand, STORAGE),
        ),
        row(
            "records",
            "recording cost per run",
            1000 * median(took),
            "ms",
            "median of the 8 writes of one run (7 audit entries)",
        ),
        row("records", "recording cost per run, p95", 1000 * sorted(took)[int(0.95 * len(took))], "ms", ""),
        row(
            "records",
            f"get_runs with text filter, {RUNS} runs",
            1000 * query,
            "ms",
            "agent, since and text filters, 50 per page",
        ),
        row("records", f"verify_audit, {RUNS} runs", verify, "s", f"{7 * RUNS} entries"),
    ]


def real(url: str) -> List[Dict[str, Any]]:
    base = Path(tempfile.mkdtemp(prefix="bench-records-real-"))
    with running_norfab(base, worker(url, 1)) as nf:
        invoke(nf.client, "agent-00", "warm up")
        home = Path(
            nf.client.run_job("hermes", "get_status", workers=WORKER, timeout=30)[WORKER]["result"]["hermes_home"]
        )
        before = size(home)
        took = [timed(lambda: invoke(nf.client, "agent-00", f"Check interfaces on r{n}")) for n in range(REAL_RUNS)]
        verified = nf.client.run_job("hermes", "verify_audit", workers=WORKER, timeout=60)[WORKER]["result"]
        grown = size(home) - before
    assert verified["ok"], verified
    per_thousand = grown / REAL_RUNS * 1000 / 2**20
    return [
        row(
            "records",
            "storage per 1,000 real invokes",
            per_thousand,
            "MiB",
            f"{REAL_RUNS} invokes without tools: the request, events and answer",
            REAL_STORAGE,
            meets(per_thousand, REAL_STORAGE),
        ),
        row(
            "records",
            "invoke without tools (recorded)",
            median(took),
            "s",
            "median; compare 'invoke without tools' of the tool-call bench",
        ),
    ]


def postgresql() -> List[Dict[str, Any]]:
    with postgres_server(durable=True) as dsn:
        os.environ[PG_ENV] = dsn
        records = Records(Path(tempfile.mkdtemp()), WORKER, RecordsSettings(backend="postgresql", dsn_env=PG_ENV))
        started = time.perf_counter()
        took = [timed(lambda: one_run(records, n)) for n in range(PG_RUNS)]
        while records.outbox.waiting:  # until the record holds every write
            time.sleep(0.001)
        whole = (time.perf_counter() - started) / PG_RUNS
        changes = [timed(lambda: one_run(records, n, change=True)) for n in range(PG_RUNS, PG_RUNS + CHANGE_RUNS)]
        seen = []
        with psycopg.connect(dsn, autocommit=True) as other:  # another worker's view of the record
            for n in range(PG_RUNS + CHANGE_RUNS, PG_RUNS + CHANGE_RUNS + SEEN_RUNS):
                run_id, begun = f"{n:012x}", time.perf_counter()
                records.run_started(RunRow(run_id, "interfaces", WORKER, time.time(), "Check r1", client="noc-desk"))
                while not other.execute("SELECT 1 FROM runs WHERE run_id = %s", [run_id]).fetchone():
                    pass
                seen.append(time.perf_counter() - begun)
                records.run_ended(
                    RunStateData(
                        run_id=run_id,
                        agent="interfaces",
                        worker=WORKER,
                        state="finished",
                        started=runs.iso(time.time()),
                    ),
                    time.time(),
                )
                time.sleep(0.005)  # runs apart, as a worker's runs are
        locks = FleetDeviceLocks(records.db, WORKER)
        holder = Holder("r1", "interfaces", "bounce")
        cycle = []
        for n in range(LOCKS):
            started = time.perf_counter()
            assert locks.acquire([f"r{n % 50}"], holder, 0, lambda: False) is None
            locks.release(holder)
            cycle.append(time.perf_counter() - started)
        assert records.verify().ok
        records.close()
    load = os.getloadavg()[0]
    note = (
        "the same run as the SQLite figure, back to back: 8 writes into the worker's outbox (SQLite, WAL), moved "
        "into the record by the worker's thread meanwhile, as many as wait in one transaction waiting for the "
        f"server's flush; PostgreSQL 15 on 127.0.0.1, fsync on, load {load:.1f}"
    )
    return [
        row("records", "recording cost per run, PostgreSQL", 1000 * median(took), "ms", f"median of {PG_RUNS}; {note}"),
        row("records", "recording cost per run, PostgreSQL, p95", 1000 * sorted(took)[int(0.95 * len(took))], "ms", ""),
        row(
            "records",
            "recording cost per run until the record holds it, PostgreSQL",
            1000 * whole,
            "ms",
            f"wall time of the {PG_RUNS} runs and of moving the last of their writes, per run",
        ),
        row(
            "records",
            "recording cost per change run, PostgreSQL",
            1000 * median(changes),
            "ms",
            f"median of {CHANGE_RUNS} of the same run whose approval is of a change: its decision is in the record "
            f"before the call goes on (one transaction waiting for the flush); p95 {1000 * p95(changes):.2f} ms",
        ),
        row(
            "records",
            "run start seen by another worker after, PostgreSQL",
            1000 * median(seen),
            "ms",
            f"median of {SEEN_RUNS} runs 5 ms apart: from run_started until another connection reads the run; "
            f"p95 {1000 * p95(seen):.2f} ms",
        ),
        row(
            "records",
            "device lock acquire + release, PostgreSQL",
            1000 * median(cycle),
            "ms",
            f"median of {LOCKS}: advisory lock, holder row written and deleted, unlock",
        ),
    ]


def run(url: str) -> List[Dict[str, Any]]:
    return synthetic() + postgresql() + real(url)
