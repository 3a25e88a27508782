"""
A fleet of agents on one worker: start time, memory per idle agent,
get_agents latency and invoke latency with 5 and with 500 agents, each
against issue 34's target.
"""

import tempfile
from pathlib import Path
from typing import Any, Dict, List

from common import WORKER, invoke, median, meets, row, rss_mb, started_in, timed, worker, worker_process

from norfab_hermes.testing.embedded import running_norfab

SMALL, LARGE = 5, 500
ROUNDS = 10
INVOKES = 40  # a new-session invoke is ~50 ms: ten of them were too few to tell 5 agents from 500 under load
START, LISTING, IDLE_RSS, INVOKE = "<= 30 s", "<= 200 ms", "<= 2 MiB", "<= 1.1x"  # issue 34's targets


def measure(url: str, count: int) -> Dict[str, float]:
    base = Path(tempfile.mkdtemp(prefix=f"bench-agents-{count}-"))
    with running_norfab(base, worker(url, count)) as nf:
        client = nf.client
        rss = rss_mb(worker_process(client))  # idle: before any run
        listing = median(
            [timed(lambda: client.run_job("hermes", "get_agents", workers=WORKER, timeout=60)) for _ in range(ROUNDS)]
        )
        for i in range(3):
            invoke(client, "agent-00", f"warm up {i}")
        turn = median([timed(lambda i=i: invoke(client, "agent-00", f"hello {i}")) for i in range(INVOKES)])
    return {"start": started_in(base), "rss": rss, "get_agents": listing, "invoke": turn}


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
    ratio = large["invoke"] / small["invoke"]
    for count, m in ((SMALL, small), (LARGE, large)):
        rows.append(
            row("agents", f"invoke, new session, {count} agents", m["invoke"], "s", f"agent-00, median of {INVOKES}")
        )
    rows.append(
        row("agents", f"invoke, {LARGE} agents / {SMALL}", ratio, "x", "new sessions", INVOKE, meets(ratio, INVOKE))
    )
    return rows
