"""Shared helpers of the benchmarks: timing, rows and the hermes worker under test."""

import json
import statistics
import time
from typing import Any, Callable, Dict, List

import psutil

from norfab_hermes.testing.embedded import hermes_worker

WORKER = "hermes-worker-1"


def row(benchmark: str, metric: str, value: float, unit: str, note: str = "") -> Dict[str, Any]:
    return {"benchmark": benchmark, "metric": metric, "value": round(value, 3), "unit": unit, "note": note}


def timed(fn: Callable[[], Any]) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def median(values: List[float]) -> float:
    return statistics.median(values)


def p95(values: List[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]


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
