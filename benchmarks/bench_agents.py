"""
A fleet of agents on one worker: start time, memory per idle agent,
get_agents latency and invoke latency with 5 and with 500 agents, each
against issue 34's target. The invokes go to a worker of 5 agents and one
of 500 behind one broker, in pairs back to back, so load slows both alike.
"""

import tempfile
from pathlib import Path
from typing import Any, Dict, List

from common import WORKER, interleaved, median, meets, row, rss_mb, started_in, timed, worker, worker_process

from norfab_hermes.testing.embedded import running_norfab

SMALL, LARGE = 5, 500
ROUNDS = 10
INVOKES = 40  # pairs of new-session invokes (~50 ms each)
START, LISTING, IDLE_RSS, INVOKE = "<= 30 s", "<= 200 ms", "<= 2 MiB", "<= 1.1x"  # issue 34's targets


def measure(url: str, count: int) -> Dict[str, float]:
    base = Path(tempfile.mkdtemp(prefix=f"bench-agents-{count}-"))
    with running_norfab(base, worker(url, count)) as nf:
        client = nf.client
        rss = rss_mb(worker_process(client))  # idle: before any run
        listing = median(
            [timed(lambda: client.run_job("hermes", "get_agents", workers=WORKER, timeout=60)) for _ in range(ROUNDS)]
        )
    return {"start": started_in(base), "rss": rss, "get_agents": listing}


def invokes(url: str) -> Dict[str, List[float]]:
    """Milliseconds of new-session invokes of agent-00 on a worker of SMALL agents and one of LARGE, paired."""
    names = {count: f"hermes-{count}-agents" for count in (SMALL, LARGE)}
    workers = {name: worker(url, count)[WORKER] for count, name in names.items()}
    with running_norfab(Path(tempfile.mkdtemp(prefix="bench-agents-invoke-")), workers) as nf:

        def turn(name: str) -> Any:
            def one(i: int) -> None:
                kwargs = {"agent": "agent-00", "instructions": f"hello {i}"}
                result = nf.client.run_job("hermes", "invoke", kwargs=kwargs, workers=[name], timeout=180)[name]
                if result["failed"]:
                    raise RuntimeError(f"invoke failed on {name}: {result['errors']}")

            return one

        times = interleaved({count: turn(name) for count, name in names.items()}, INVOKES, warm_up=3)
    return {str(count): spent for count, spent in times.items()}


def run(url: str) -> List[Dict[str, Any]]:
    small, large = measure(url, SMALL), measure(url, LARGE)
    per_agent = (large["rss"] - small["rss"]) / (LARGE - SMALL)
    rows = []
    for count, m in ((SMALL, small), (LARGE, large)):
        note = "hermes worker __init__, from its log"
        rows.append(
            row("agents", f"worker start, {count} agents", m["start"], "s", note, START, meets(m["start"], START))
        )
        listing = m["get_agents"] * 1000
        note = f"median of {ROUNDS}"
        rows.append(row("agents", f"get_agents, {count} agents", listing, "ms", note, LISTING, meets(listing, LISTING)))
    note = f"(RSS at {LARGE}: {large['rss']:.0f} MiB - RSS at {SMALL}: {small['rss']:.0f} MiB) / {LARGE - SMALL}"
    rows.append(row("agents", "RSS per idle agent", per_agent, "MiB", note, IDLE_RSS, meets(per_agent, IDLE_RSS)))
    times = invokes(url)
    for count in (SMALL, LARGE):
        note = f"agent-00, median of {INVOKES}, paired with the other worker's"
        rows.append(row("agents", f"invoke, new session, {count} agents", median(times[str(count)]) / 1000, "s", note))
    ratio = median([b / a for a, b in zip(times[str(SMALL)], times[str(LARGE)])])
    note = "median of the pairs' ratios, new sessions"
    rows.append(row("agents", f"invoke, {LARGE} agents / {SMALL}", ratio, "x", note, INVOKE, meets(ratio, INVOKE)))
    return rows
