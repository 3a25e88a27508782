"""
A fleet: the same agents on one hermes worker, or split over two worker
processes (the second started the way a remote host starts it); what a
delegated question costs next to asking the other agent directly; and eight
worker processes of fifty agents each behind one broker: routing, the fleet's
agent list and parallel efficiency across it.
"""

import concurrent.futures
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List

from common import WORKER, agents, median, meets, p95, row, timed

from norfab_hermes.routing.client import Hermes
from norfab_hermes.testing.embedded import hermes_worker, remote_worker, running_norfab

SECOND = "hermes-worker-2"
AGENTS = 8
LATENCY = 1.0  # scripted model seconds per turn
CONCURRENT = 16  # invokes in flight at once
INVOKES = 48  # per measurement
DELEGATIONS = 10
FLEET, FLEET_AGENTS = 8, 50  # worker processes, agents each
FLEET_IN_FLIGHT, FLEET_LATENCY = 40, 2.0
ROUTED = 20  # routed invokes and fleet agent lists measured
FLEET_TARGET = "<= 0.3 s"


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


def fleet_of_eight(url: str) -> List[Dict[str, Any]]:
    """FLEET workers of FLEET_AGENTS agents each (agent names unique across the fleet) behind one broker."""
    workers = {}
    for w in range(FLEET):
        names = {
            f"w{w}-agent-{i:02d}": {"instructions": f"You are agent {i} of worker {w}."} for i in range(FLEET_AGENTS)
        }
        inventory = hermes_worker(url, names, max_concurrent_runs=FLEET_IN_FLIGHT)
        inventory["model"]["default"] = "scripted-model"
        workers[f"hermes-worker-{w + 1}"] = inventory
    with running_norfab(Path(tempfile.mkdtemp(prefix="bench-fleet8-")), workers) as nf:
        hermes = Hermes(nf.client)

        def listed() -> None:
            replies = hermes.agents()
            if sum(len(r["result"] or []) for r in replies.values()) != FLEET * FLEET_AGENTS:
                raise RuntimeError(f"the fleet lists {sum(len(r['result'] or []) for r in replies.values())} agents")

        def routed(i: int) -> None:
            reply = hermes.invoke(f"w{i % FLEET}-agent-{i % FLEET_AGENTS:02d}", f"hello #{i}")
            if reply["failed"]:
                raise RuntimeError(reply["errors"])

        listed(), routed(0)  # warm up
        lists = [timed(listed) for _ in range(ROUTED)]
        invokes = [timed(lambda i=i: routed(i)) for i in range(ROUTED)]

        def batch(count: int, spread: int) -> float:
            def ask(i: int) -> None:
                reply = hermes.invoke(f"w{i % spread}-agent-{i % FLEET_AGENTS:02d}", f"SLEEP {FLEET_LATENCY} #{i}")
                if reply["failed"]:
                    raise RuntimeError(reply["errors"])

            with concurrent.futures.ThreadPoolExecutor(count) as pool:
                return timed(lambda: list(pool.map(ask, range(count))))

        batch(FLEET, FLEET)  # warm up a worker's agents on each
        single = median([batch(1, 1) for _ in range(3)])
        one, fleet = single / batch(FLEET_IN_FLIGHT, 1), single / batch(FLEET_IN_FLIGHT, FLEET)
    size = f"{FLEET} workers x {FLEET_AGENTS} agents, one broker, routed by Hermes(client)"
    bound = "2 cores bound this machine: reported, not a target here"
    return [
        row(
            "fleet",
            "hermes agents over the fleet, median",
            median(lists),
            "s",
            f"{size}: get_agents of every worker",
            FLEET_TARGET,
            meets(median(lists), FLEET_TARGET),
        ),
        row("fleet", "hermes agents over the fleet, p95", p95(lists), "s", size),
        row(
            "fleet",
            "routed invoke, median",
            median(invokes),
            "s",
            f"{size}: find the agent's worker, then invoke",
            FLEET_TARGET,
            meets(median(invokes), FLEET_TARGET),
        ),
        row("fleet", "routed invoke, p95", p95(invokes), "s", size),
        row(
            "fleet", f"parallel efficiency N={FLEET_IN_FLIGHT}, one worker", one, "", f"model {FLEET_LATENCY}s; {bound}"
        ),
        row("fleet", f"parallel efficiency N={FLEET_IN_FLIGHT}, across {FLEET} workers", fleet, "", bound),
    ]


def run(url: str) -> List[Dict[str, Any]]:
    single = one_worker(url)
    split, *rows = two_workers(url)
    note = f"{AGENTS} agents, {CONCURRENT} in flight, {INVOKES} invokes, model latency {LATENCY}s"
    return [
        row("fleet", "throughput, one worker", single, "invokes/s", note),
        row("fleet", "throughput, two worker processes", split["rate"], "invokes/s", note),
        row("fleet", "two processes / one worker", split["rate"] / single, "", "throughput ratio"),
        *rows,
        *fleet_of_eight(url),
    ]
