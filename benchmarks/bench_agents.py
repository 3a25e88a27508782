"""
A fleet of agents on one worker: start time, memory per idle agent,
get_agents latency and invoke latency with 5 and with 500 agents, each
against issue 34's target.
"""

import tempfile
from pathlib import Path
from typing import Any, Dict, List

from common import WORKER, invoke, median, row, rss_mb, started_in, timed, worker, worker_process

from norfab_hermes.testing.embedded import running_norfab

SMALL, LARGE = 5, 500
ROUNDS = 10


def measure(url: str, count: int) -> Dict[str, float]:
    base = Path(tempfile.mkdtemp(prefix=f"bench-agents-{count}-"))
    with running_norfab(base, worker(url, count)) as nf:
        client = nf.client
        rss = rss_mb(worker_process(client))  # idle: before any run
        listing = median(
            [timed(lambda: client.run_job("hermes", "get_agents", workers=WORKER, timeout=60)) for _ in range(ROUNDS)]
        )
        invoke(client, "agent-00", "warm up")
        turn = median([timed(lambda i=i: invoke(client, "agent-00", f"hello {i}")) for i in range(ROUNDS)])
    return {"start": started_in(base), "rss": rss, "get_agents": listing, "invoke": turn}


def target(result: Dict[str, Any], text: str, met: bool) -> Dict[str, Any]:
    return {**result, "target": text, "met": met}


def run(url: str) -> List[Dict[str, Any]]:
    small, large = measure(url, SMALL), measure(url, LARGE)
    per_agent = (large["rss"] - small["rss"]) / (LARGE - SMALL)
    rows = []
    for count, m in ((SMALL, small), (LARGE, large)):
        rows.append(
            target(
                row("agents", f"worker start, {count} agents", m["start"], "s", "hermes worker __init__, from its log"),
                "<= 30 s",
                m["start"] <= 30,
            )
        )
        rows.append(
            target(
                row("agents", f"get_agents, {count} agents", m["get_agents"] * 1000, "ms", f"median of {ROUNDS}"),
                "<= 200 ms",
                m["get_agents"] <= 0.2,
            )
        )
    rows.append(
        target(
            row(
                "agents",
                "RSS per idle agent",
                per_agent,
                "MiB",
                f"(RSS at {LARGE}: {large['rss']:.0f} MiB - RSS at {SMALL}: {small['rss']:.0f} MiB) / {LARGE - SMALL}",
            ),
            "<= 2 MiB",
            per_agent <= 2,
        )
    )
    for count, m in ((SMALL, small), (LARGE, large)):
        rows.append(
            target(
                row(
                    "agents", f"invoke, new session, {count} agents", m["invoke"], "s", f"agent-00, median of {ROUNDS}"
                ),
                "within 10% of 5 agents",
                m["invoke"] <= small["invoke"] * 1.1,
            )
        )
    return rows
