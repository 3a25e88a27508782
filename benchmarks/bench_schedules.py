"""
Scheduled checks: how close to their due time schedules fire while several
agents' schedules fall due together, how 200 occurrences due in the same
second share a worker's run slots (``fair``), and what the scheduler costs
while nothing is due.

usage (the fair admission rows alone, a few minutes): python benchmarks/bench_schedules.py fair
"""

import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Dict, List

from common import WORKER, median, meets, row, worker, worker_process

from norfab_hermes.testing.embedded import most_at_once, running_norfab

AGENTS = 4
SCHEDULES_PER_AGENT = 2
ACCURACY_SECONDS = 120
IDLE = ((20, 1), (100, 20))  # agents, hourly schedules each: 20 and 2,000 schedules
IDLE_SECONDS = 30
IDLE_TARGET = "<= 1 %"
FAIR = (20, 10, 10)  # agents, schedules due at once each, run slots: 200 occurrences over 10 slots
FAIR_CREATE_SECONDS = 0.25  # per schedule created, at most (the due time is set that far ahead)
FAIR_TIMEOUT = 600


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


def fair(url: str) -> List[Dict[str, Any]]:
    """Every agent's schedules due in the same second, more than the run slots: how long until the last one
    is admitted, each agent's longest wait, none lost, never more runs at once than the slots."""
    agents, each, slots = FAIR
    total = agents * each
    with running_norfab(
        Path(tempfile.mkdtemp(prefix="bench-fair-")), worker(url, agents, max_concurrent_runs=slots)
    ) as nf:
        ahead = 10 + total * FAIR_CREATE_SECONDS
        due = (datetime.now(timezone.utc) + timedelta(seconds=ahead)).replace(microsecond=0)
        names = [f"agent-{i:02d}" for i in range(agents)]
        for agent in names:
            for n in range(each):
                definition = {"name": f"s{n}", "prompt": f"check {n}", "schedule": f"{due.minute} * * * * {due.second}"}
                schedule(nf.client, agent, action="create", definition=definition)
        if datetime.now(timezone.utc) >= due:
            raise RuntimeError(f"creating {total} schedules took more than {ahead:.0f} s: raise FAIR_CREATE_SECONDS")
        queued_peak, deadline, finished = 0, time.time() + FAIR_TIMEOUT, []
        while time.time() < deadline:
            status = nf.client.run_job("hermes", "get_status", workers=WORKER, timeout=30)[WORKER]["result"]
            queued_peak = max(queued_peak, sum(a.get("queued", 0) for a in status["scheduler"]["agents"].values()))
            runs = nf.client.run_job("hermes", "get_runs", kwargs={"limit": 1000}, workers=WORKER, timeout=60)
            finished = [r for r in runs[WORKER]["result"]["runs"] if r["schedule_id"] and r["state"] == "finished"]
            if datetime.now(timezone.utc) > due and len(finished) >= total:
                break
            time.sleep(1)
        ok = sum(
            1
            for agent in names
            for n in range(each)
            for run in schedule(nf.client, agent, action="history", schedule_id=f"s{n}", limit=10)["history"]
            if run["status"] == "ok"
        )
    started = {r["run_id"]: datetime.fromisoformat(r["started"]) for r in finished}
    waits: Dict[str, List[float]] = {}
    for r in finished:
        waits.setdefault(r["agent"], []).append((started[r["run_id"]] - due).total_seconds())
    spans = [(started[r["run_id"]], datetime.fromisoformat(r["finished"])) for r in finished]
    note = f"{agents} agents x {each} schedules due in the same second, max_concurrent_runs {slots}; wait = run accepted - due"
    return [
        row("schedules", "occurrences due at once, ran ok", ok, "runs", note, f">= {total}", meets(ok, f">= {total}")),
        row("schedules", "occurrences queued at once, peak seen", queued_peak, "occurrences", note),
        row("schedules", "time until the first is admitted", min(min(w) for w in waits.values()), "s", note),
        row("schedules", "time until the last is admitted", max(max(w) for w in waits.values()), "s", note),
        row(
            "schedules",
            "an agent's first run admitted, the latest agent",
            max(min(w) for w in waits.values()),
            "s",
            note,
        ),
        row(
            "schedules",
            "an agent's last run admitted, the earliest agent",
            min(max(w) for w in waits.values()),
            "s",
            note,
        ),
        row(
            "schedules",
            "runs at once, most",
            most_at_once(spans),
            "runs",
            note,
            f"<= {slots}",
            meets(most_at_once(spans), f"<= {slots}"),
        ),
    ]


def run(url: str) -> List[Dict[str, Any]]:
    return accuracy(url) + fair(url) + [idle_cpu(url, agents, each) for agents, each in IDLE]


if __name__ == "__main__":
    from norfab_hermes.testing.scripted_model import ScriptedModelServer

    if sys.argv[1:] != ["fair"]:
        sys.exit(__doc__)
    with ScriptedModelServer() as server:
        for figure in fair(server.base_url):
            print(f"{figure['metric']}: {figure['value']} {figure['unit']}  {figure['target']}  ({figure['note']})")
