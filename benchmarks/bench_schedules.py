"""
Scheduled checks: how close to their due time schedules fire while several
agents' schedules fall due together, and what the scheduler costs while
nothing is due.
"""

import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any, Dict, List

from common import WORKER, median, meets, row, worker, worker_process

from norfab_hermes.testing.embedded import running_norfab

AGENTS = 4
SCHEDULES_PER_AGENT = 2
ACCURACY_SECONDS = 120
IDLE = ((20, 1), (100, 20))  # agents, hourly schedules each: 20 and 2,000 schedules
IDLE_SECONDS = 30
IDLE_TARGET = "<= 1 %"


def schedule(client: Any, agent: str, **kwargs: Any) -> Dict[str, Any]:
    reply = client.run_job("hermes", "schedule", kwargs={"agent": agent, **kwargs}, workers=WORKER, timeout=60)[WORKER]
    if reply["failed"]:
        raise RuntimeError(f"schedule failed: {reply['errors']}")
    return reply["result"]


def accuracy(url: str) -> List[Dict[str, Any]]:
    with running_norfab(
        Path(tempfile.mkdtemp(prefix="bench-schedules-")), worker(url, AGENTS, max_concurrent_runs=8)
    ) as nf:
        names = [f"agent-{i:02d}" for i in range(AGENTS)]
        for agent in names:
            for n in range(SCHEDULES_PER_AGENT):
                definition = {"name": f"s{n}", "prompt": f"check {n}", "schedule": "* * * * * */5"}
                schedule(nf.client, agent, action="create", definition=definition)
        time.sleep(ACCURACY_SECONDS)
        lateness = []
        for agent in names:
            for n in range(SCHEDULES_PER_AGENT):
                for run in schedule(nf.client, agent, action="history", schedule_id=f"s{n}", limit=1000)["history"]:
                    if run["status"] == "ok":
                        started, due = datetime.fromisoformat(run["started"]), datetime.fromisoformat(run["due"])
                        lateness.append((started - due).total_seconds())
    note = (
        f"{AGENTS} agents x {SCHEDULES_PER_AGENT} schedules every 5 s for {ACCURACY_SECONDS} s; fire = the run starts"
    )
    return [
        row("schedules", "runs fired", len(lateness), "runs", note),
        row("schedules", "fire time - due time, median", median(lateness), "s", note),
        row("schedules", "fire time - due time, max", max(lateness), "s", note),
    ]


def idle_cpu(url: str, agents: int, each: int) -> Dict[str, Any]:
    with running_norfab(Path(tempfile.mkdtemp(prefix="bench-idle-")), worker(url, agents)) as nf:
        for i in range(agents):
            for n in range(each):
                definition = {"name": f"hourly-{n}", "prompt": "check", "schedule": "every 1h"}
                schedule(nf.client, f"agent-{i:02d}", action="create", definition=definition)
        process = worker_process(nf.client)
        time.sleep(3)
        before = sum(process.cpu_times()[:2])
        time.sleep(IDLE_SECONDS)
        used = sum(process.cpu_times()[:2]) - before
    note = f"hermes worker process, {agents} agents with {each} hourly schedule(s) each, nothing due, {IDLE_SECONDS} s"
    used = 100 * used / IDLE_SECONDS
    metric = f"worker CPU while idle, {agents * each} schedules"
    return row("schedules", metric, used, "% of a core", note, IDLE_TARGET, meets(used, IDLE_TARGET))


def run(url: str) -> List[Dict[str, Any]]:
    return accuracy(url) + [idle_cpu(url, agents, each) for agents, each in IDLE]
