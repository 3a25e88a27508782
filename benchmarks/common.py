"""Shared helpers of the benchmarks: timing, rows and the hermes worker under test."""

import json
import operator
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

import psutil

from norfab_hermes.testing.embedded import hermes_worker

WORKER = "hermes-worker-1"


def row(
    benchmark: str,
    metric: str,
    value: float,
    unit: str,
    note: str = "",
    target: str = "",
    met: Optional[bool] = None,
) -> Dict[str, Any]:
    """One figure of the table; ``met`` None: not judged (no target, or the note says why not)."""
    return {
        "benchmark": benchmark,
        "metric": metric,
        "value": round(value, 3),
        "unit": unit,
        "note": note,
        "target": target,
        "met": met,
    }


def meets(value: float, target: str) -> bool:
    """Whether ``value`` meets a target written as in the table: "<= 10 ms", ">= 0.9", "<= 1.1x"."""
    comparison, bound = target.split()[:2]
    compare = {"<=": operator.le, ">=": operator.ge}[comparison]
    return bool(compare(round(value, 3), float(bound.rstrip("x"))))


def sqlite_insert_ms(count: int = 500) -> float:
    """Median milliseconds of one single-row committed insert into SQLite (WAL, synchronous=NORMAL) in a
    temporary directory: the floor under any write the records make."""
    with tempfile.TemporaryDirectory(prefix="bench-sqlite-") as folder:
        db = sqlite3.connect(Path(folder) / "anchor.db", isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT)")
        spent = []
        for i in range(count):
            started = time.perf_counter()
            db.execute("BEGIN")
            db.execute("INSERT INTO t (body) VALUES (?)", (f"row {i}",))
            db.execute("COMMIT")
            spent.append((time.perf_counter() - started) * 1000)
        db.close()
    return median(spent)


def timed(fn: Callable[[], Any]) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def median(values: List[float]) -> float:
    return statistics.median(values)


def p95(values: List[float]) -> float:
    return quantile(values, 0.95)


def p99(values: List[float]) -> float:
    return quantile(values, 0.99)


def quantile(values: List[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def invoke(client: Any, agent: str, text: str, **kwargs: Any) -> Dict[str, Any]:
    reply = client.run_job(
        "hermes", "invoke", kwargs={"agent": agent, "instructions": text, **kwargs}, workers=WORKER, timeout=180
    )
    result = reply[WORKER]
    if result["failed"]:
        raise RuntimeError(f"invoke failed: {result['errors']}")
    return result["result"]


def worker_process(client: Any) -> psutil.Process:
    status = client.run_job("hermes", "get_status", workers=WORKER, timeout=30)[WORKER]["result"]
    return psutil.Process(status["pid"])


def cpu_seconds(process: psutil.Process) -> float:
    times = process.cpu_times()
    return times.user + times.system


def rss_mb(process: psutil.Process) -> float:
    return process.memory_info().rss / 2**20


def started_in(base: Any) -> float:
    """The hermes worker's own start-up time, from its NorFab log."""
    for line in open(base / "__norfab__" / "logs" / f"worker-{WORKER}.jsonl"):
        message = json.loads(line)["message"]
        if message.startswith(f"{WORKER} - Started in "):
            return float(message.split()[-1].rstrip("s"))
    raise RuntimeError("the hermes worker logged no start time")


def agents(count: int, **definition: Any) -> Dict[str, Any]:
    return {f"agent-{i:02d}": {"instructions": f"You are agent {i}.", **definition} for i in range(count)}


def worker(url: str, count: int, **settings: Any) -> Dict[str, Any]:
    inventory = hermes_worker(url, agents(count), **settings)
    # a named model: without one Hermes probes a local server's /models every turn
    inventory["model"]["default"] = "scripted-model"
    return {WORKER: inventory}


def interleaved(turns: Dict[str, Callable[[int], Any]], count: int, warm_up: int) -> Dict[str, List[float]]:
    """Milliseconds of ``count`` calls of each turn, taken in pairs back to back (their order swapped
    every other time), after ``warm_up`` pairs not counted: a busy machine slows both alike."""
    names, times = list(turns), {name: [] for name in turns}
    for i in range(warm_up + count):
        for name in names if i % 2 else list(reversed(names)):
            spent = timed(lambda: turns[name](i))
            if i >= warm_up:
                times[name].append(spent * 1000)
    return times


def added_rows(
    benchmark: str, times: Dict[str, List[float]], base: str, other: str, labels: Dict[str, str], note: str, budget: str
) -> List[Dict[str, Any]]:
    """Median and p95 of each kind of turn, and what ``other`` adds to ``base``: medians, p95s, and the
    median of the paired differences (least sensitive to load)."""
    rows = []
    for name in (base, other):
        rows.append(row(benchmark, f"continued turn {labels[name]}, median", median(times[name]), "ms", note))
        rows.append(row(benchmark, f"continued turn {labels[name]}, p95", p95(times[name]), "ms", note))
    rows.append(
        row(benchmark, "added to a continued turn, median", median(times[other]) - median(times[base]), "ms", budget)
    )
    rows.append(row(benchmark, "added to a continued turn, p95", p95(times[other]) - p95(times[base]), "ms", budget))
    paired = [b - a for a, b in zip(times[base], times[other])]
    rows.append(
        row(
            benchmark,
            "added to a continued turn, paired median",
            median(paired),
            "ms",
            "median of the differences of turns run back to back: least sensitive to load",
        )
    )
    return rows
