"""
A fleet: the same agents on one hermes worker, or split over two worker
processes (the second started the way a remote host starts it); and what a
delegated question costs next to asking the other agent directly.
"""

import concurrent.futures
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List

from common import WORKER, agents, median, row, timed

from norfab_hermes.testing.embedded import hermes_worker, remote_worker, running_norfab

SECOND = "hermes-worker-2"
AGENTS = 8
LATENCY = 1.0  # scripted model seconds per turn
CONCURRENT = 16  # invokes in flight at once
INVOKES = 48  # per measurement
DELEGATIONS = 10


def inventory(url: str, names: List[str], **extra: Any) -> Dict[str, Any]:
    worker = hermes_worker(
        url, {name: definition for name, definition in agents(AGENTS).items() if name in names}, **extra
    )
    worker["model"]["default"] = "scripted-model"  # without one Hermes probes a local server's /models every turn
    return worker


def throughput(client: Any, placement: Dict[str, str]) -> float:
    """Invokes per second with CONCURRENT in flight, each agent on its worker."""

    def ask(i: int) -> None:
        agent = f"agent-{i % AGENTS:02d}"
        worker = placement[agent]
        reply = client.run_job(
            "hermes",
            "invoke",
            kwargs={"agent": agent, "instructions": f"SLEEP {LATENCY} #{i}"},
            workers=worker,
            timeout=180,
        )
        if reply[worker]["failed"]:
            raise RuntimeError(reply[worker]["errors"])

    with concurrent.futures.ThreadPoolExecutor(CONCURRENT) as pool:
        list(pool.map(ask, range(AGENTS)))  # warm up every agent
        took = timed(lambda: list(pool.map(ask, range(INVOKES))))
    return INVOKES / took


def one_worker(url: str) -> float:
    names = list(agents(AGENTS))
    workers = {WORKER: inventory(url, names, max_concurrent_runs=CONCURRENT)}
    with running_norfab(Path(tempfile.mkdtemp(prefix="bench-fleet1-")), workers) as nf:
        return throughput(nf.client, {name: WORKER for name in names})


def two_workers(url: str) -> List[Dict[str, Any]]:
    names = list(agents(AGENTS))
    half = AGENTS // 2
    first = inventory(url, names[:half], max_concurrent_runs=CONCURRENT)
    first["agents"]["asker"] = {
        "instructions": "You ask.",
        "toolsets": ["norfab"],
        "delegates": {"ask": {"agent": names[half], "workers": SECOND}},
    }
    workers = {WORKER: first, SECOND: inventory(url, names[half:], max_concurrent_runs=CONCURRENT)}
    base = Path(tempfile.mkdtemp(prefix="bench-fleet2-"))
    with running_norfab(base, workers, separate=(SECOND,)) as nf, remote_worker(nf, SECOND, base / "second-host"):
        placement = {name: WORKER if i < half else SECOND for i, name in enumerate(names)}
        rate = throughput(nf.client, placement)
        direct, delegated = delegation(nf.client, names[half])
    return [
        {"rate": rate},
        row(
            "fleet",
            "direct invoke of an agent on the other worker",
            direct,
            "s",
            f"median of {DELEGATIONS}, from the client",
        ),
        row(
            "fleet",
            "the same question as a delegated call",
            delegated,
            "s",
            "median duration of the delegate tool call inside the asking run",
        ),
        row("fleet", "delegation overhead ratio", delegated / direct, "", "delegated call / direct invoke"),
    ]


def delegation(client: Any, asked: str) -> tuple:
    direct, delegated = [], []
    for i in range(DELEGATIONS):
        started = time.perf_counter()
        reply = client.run_job(
            "hermes", "invoke", kwargs={"agent": asked, "instructions": f"hello #{i}"}, workers=SECOND, timeout=60
        )
        direct.append(time.perf_counter() - started)
        if reply[SECOND]["failed"]:
            raise RuntimeError(reply[SECOND]["errors"])
        text = f'CALL ask {{"question": "hello #{i}"}}'
        reply = client.run_job(
            "hermes", "invoke", kwargs={"agent": "asker", "instructions": text}, workers=WORKER, timeout=60
        )
        [call] = reply[WORKER]["result"]["tool_calls"]
        if call["status"] != "completed":
            raise RuntimeError(call["error"])
        delegated.append(call["duration"])
    return median(direct), median(delegated)


def run(url: str) -> List[Dict[str, Any]]:
    single = one_worker(url)
    split, *rows = two_workers(url)
    note = f"{AGENTS} agents, {CONCURRENT} in flight, {INVOKES} invokes, model latency {LATENCY}s"
    return [
        row("fleet", "throughput, one worker", single, "invokes/s", note),
        row("fleet", "throughput, two worker processes", split["rate"], "invokes/s", note),
        row("fleet", "two processes / one worker", split["rate"] / single, "", "throughput ratio"),
        *rows,
    ]
