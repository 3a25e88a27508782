"""
A year of run records on one worker: a SQLite record filled with RUNS runs (20 agents, a spread of
states, stop reasons, schedules, cases, deciders and texts over a year), written straight into the
record's own tables in large transactions (the recorder would take hours), then get_runs with each
documented filter, newest first, 50 a page, through the store as the task calls it.

usage: the "million" benchmark of run.py; NORFAB_HERMES_BENCH_RUNS sets the size (default 1,000,000)
"""

import os
import random
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List

from common import WORKER, median, meets, row, timed

from norfab_hermes.models import GetRunsInput, RecordsSettings
from norfab_hermes.worker.records.db import RECORDS_FILE
from norfab_hermes.worker.records.store import Records

RUNS = int(os.environ.get("NORFAB_HERMES_BENCH_RUNS", "1000000"))
BATCH = 50_000
AGENTS = [f"agent-{i:02d}" for i in range(20)]
STOPS = ["completed"] * 90 + ["failed"] * 4 + ["timeout"] * 3 + ["token_budget", "interrupted", "outcome_unknown"]
YEAR = 365 * 86400
TARGET = "<= 100 ms"
ANSWER = "Gi0/1 is down since 02:10 (line protocol down, 412 input errors); Gi0/2 and Gi0/3 are up. " * 4


def fill(folder: Path) -> Records:
    records = Records(folder, WORKER, RecordsSettings())
    now, rng = time.time(), random.Random(7)
    with sqlite3.connect(folder / RECORDS_FILE) as db:
        for start in range(0, RUNS, BATCH):
            runs, approvals = [], []
            for n in range(start, min(RUNS, start + BATCH)):
                started = now - YEAR + YEAR * n / RUNS
                agent = AGENTS[n % len(AGENTS)]
                scheduled = n % 3 == 0
                runs.append(
                    (
                        f"{n:012x}",
                        agent,
                        WORKER,
                        "finished",
                        rng.choice(STOPS),
                        started,
                        started + 5,
                        f"session-{n}",
                        f"sched-{agent}-{n % 4}" if scheduled else None,
                        f"case-{n // 500}" if n % 7 == 0 else None,
                        "noc-desk",
                        f"Check interfaces on r{n % 400}: users report loss #{n}",
                        ANSWER,
                    )
                )
                if n % 10 == 0:
                    approvals.append(
                        (f"a{n:011x}", f"{n:012x}", agent, "approved", "2026-01-01", f"lead-{n // 10 % 5}", "{}")
                    )
            db.executemany(
                "INSERT INTO runs (run_id, agent, worker, state, stop_reason, started, finished, session_id, "
                "schedule_id, case_id, client, instructions, response) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                runs,
            )
            db.executemany(
                "INSERT INTO approvals (approval_id, run_id, agent, state, requested, decided_by, info) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                approvals,
            )
            db.commit()
    return records


QUERIES = {
    "newest 50, no filter": {},
    "agent": {"agent": "agent-07"},
    "state": {"state": "finished"},
    "stop reason (rare)": {"stop_reason": "outcome_unknown"},
    "schedule": {"schedule_id": "sched-agent-03-3"},
    "case": {"case_id": "case-700"},
    "decided by": {"decided_by": "lead-3"},
    "since 1 day": {"since": "1d"},
    "agent and since 7 days": {"agent": "agent-07", "since": "7d"},
    "text": {"text": "r17: users"},
    "text and agent and since 7 days": {"text": "r17:", "agent": "agent-07", "since": "7d"},
    "page 100 of an agent": {"agent": "agent-07", "offset": 5000},
}


def run(url: str) -> List[Dict[str, Any]]:
    folder = Path(tempfile.mkdtemp(prefix="bench-million-"))
    filled = timed(lambda: fill(folder))
    records = Records(folder, WORKER, RecordsSettings())
    size = sum(path.stat().st_size for path in folder.glob(RECORDS_FILE + "*")) / RUNS
    rows = [
        row("a million runs", "fill the record", filled, "s", f"{RUNS} runs straight into the tables"),
        row("a million runs", "bytes per run", size, "B", "runs and approvals rows with their indexes"),
    ]
    for name, filters in QUERIES.items():
        query = GetRunsInput(limit=50, **filters)
        took = 1000 * median([timed(lambda: records.runs(query)) for _ in range(3)])
        note = f"{RUNS} runs, median of 3, 50 a page"
        rows.append(row("a million runs", f"get_runs: {name}", took, "ms", note, TARGET, meets(took, TARGET)))
    return rows
