"""Parallel efficiency of concurrent invokes and interrupt latency."""

import concurrent.futures
import json
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List

from common import WORKER, invoke, median, meets, p95, row, timed, worker

from norfab_hermes.testing.embedded import running_norfab

LATENCY = 2.0  # scripted model seconds per turn
RUNS = 20  # the worker's max_concurrent_runs
INTERRUPTS = 20
TARGETS = {10: ">= 0.9", 20: ">= 0.8"}  # parallel efficiency by runs in flight
# the turns share the worker's one interpreter lock: N runs' CPU per turn is serialised, so a batch
# takes at least the model latency + N x the CPU of a turn
BOUND = "bounded by N x the worker's CPU per turn, serialised under one interpreter lock"
IN_FLIGHT = (1, 5, 10, 20)


def bare_efficiency(url: str) -> Dict[int, float]:
    """The parallel efficiency of bare Hermes AIAgents on the same model in one process of their own, by
    conversations in flight: what Hermes itself reaches on this machine, the anchor of the targets."""
    counts = ",".join(str(count) for count in IN_FLIGHT)
    script = str(Path(__file__).with_name("bare_agent.py"))
    out = subprocess.run(
        [sys.executable, script, url, "--in-flight", counts, str(LATENCY)], check=True, capture_output=True, text=True
    )
    figures = json.loads(out.stdout.strip().splitlines()[-1])
    return {int(count): figures["single"] / took for count, took in figures["batches"].items()}


def judged(value: float, target: str, bare: float) -> tuple:
    """(met, note) of an efficiency against its target; not judged where the bare agent misses it too."""
    if not target:
        return None, ""
    if not meets(bare, target):
        return None, f"; the bare AIAgent reaches {bare:.3f} here, so this machine cannot show {target}"
    return meets(value, target), ""


def efficiency(url: str) -> List[Dict[str, Any]]:
    bare = bare_efficiency(url)  # before the lab starts: the two do not share the cores
    rows = []
    with running_norfab(Path(tempfile.mkdtemp(prefix="bench-conc-")), worker(url, 4, max_concurrent_runs=RUNS)) as nf:
        client = nf.client

        def batch(count: int) -> float:
            with concurrent.futures.ThreadPoolExecutor(count) as pool:
                return timed(
                    lambda: list(
                        pool.map(lambda i: invoke(client, f"agent-{i % 4:02d}", f"SLEEP {LATENCY} #{i}"), range(count))
                    )
                )

        batch(4)  # warm up every agent
        single = median([batch(1) for _ in range(3)])
        rows.append(row("concurrency", "one invoke", single, "s", f"scripted model latency {LATENCY}s"))
        for count in IN_FLIGHT:
            took = batch(count)
            ideal = single * math.ceil(count / RUNS)
            target = TARGETS.get(count, "")
            met, why = judged(ideal / took, target, bare[count])
            note = f"{took:.2f}s; max_concurrent_runs={RUNS}; {BOUND}{why}"
            rows.append(row("concurrency", f"parallel efficiency N={count}", ideal / took, "", note, target, met))
            rows.append(
                row(
                    "concurrency",
                    f"parallel efficiency N={count}, bare AIAgent",
                    bare[count],
                    "",
                    "anchor; new AIAgents on threads of one process, no NorFab",
                )
            )
            rows.append(
                row(
                    "concurrency",
                    f"parallel efficiency N={count} / bare AIAgent's",
                    ideal / took / bare[count],
                    "x",
                    "above 1: the worker keeps more of the model's parallelism than Hermes alone",
                )
            )
    return rows


def interrupt_latency(url: str) -> List[Dict[str, Any]]:
    latencies = []
    with running_norfab(Path(tempfile.mkdtemp(prefix="bench-int-")), worker(url, 1)) as nf:
        client = nf.client
        for i in range(INTERRUPTS):
            future = client.submit_job(
                "hermes",
                "invoke",
                kwargs={"agent": "agent-00", "instructions": f"SLEEP 60 #{i}"},
                workers=WORKER,
                timeout=120,
            )
            run_id = next(
                (e.get("extras") or {}).get("run_id")
                for e in future.events(timeout=30)
                if (e.get("extras") or {}).get("run_id")
            )
            time.sleep(0.3)  # the turn reaches the model
            asked = time.perf_counter()
            client.run_job(
                "hermes", "interrupt", kwargs={"agent": "agent-00", "run_id": run_id}, workers=WORKER, timeout=30
            )
            stop = future.result(timeout=60)[WORKER]["result"]["stop_reason"]
            if stop != "interrupted":
                raise RuntimeError(f"run {run_id} ended {stop}")
            latencies.append(time.perf_counter() - asked)
    return [
        row("interrupt", "latency median", median(latencies), "s", "interrupt sent -> interrupted result received"),
        row("interrupt", "latency p95", p95(latencies), "s", f"{INTERRUPTS} interrupts"),
    ]


def run(url: str) -> List[Dict[str, Any]]:
    return efficiency(url) + interrupt_latency(url)
