"""
More schedules due at once than the worker has run slots, on a real NorFab:
every occurrence runs (none lost), the ones waiting are `queued` in their
history first, agents are admitted in turn (the agent with most due does not
go first with all of them), and no more runs overlap than the slots.
"""

import time
from datetime import datetime, timedelta, timezone
from typing import Any, Dict, List

from conftest import Lab, run

WORKER = "hermes-worker-1"
SLOTS = 2
HEAVY, LIGHT = "a0-heavy", ["a1", "a2", "a3"]
DUE = {HEAVY: 6, **{agent: 2 for agent in LIGHT}}  # 12 occurrences over 2 slots
RUN_SECONDS = 1.0  # each run's model reply takes this long (the scripted model's SLEEP)
AGENTS = {name: {"instructions": f"You are {name}."} for name in DUE}

LAB = Lab(workers={WORKER: AGENTS}, settings={"max_concurrent_runs": SLOTS})


def schedule(nf: Any, agent: str, **kwargs: Any) -> Dict[str, Any]:
    res = run(nf.client, "schedule", agent=agent, **kwargs)
    assert not res["failed"], res["errors"]
    return res["result"]


def histories(nf: Any) -> Dict[str, List[Dict[str, Any]]]:
    """Every schedule's history, by 'agent/name'."""
    return {
        f"{agent}/s{n}": schedule(nf, agent, action="history", schedule_id=f"s{n}", limit=20)["history"]
        for agent, count in DUE.items()
        for n in range(count)
    }


def overlap(spans: List[tuple]) -> int:
    """The most spans (start, end) open at one moment."""
    edges = sorted([(start, 1) for start, _ in spans] + [(end, -1) for _, end in spans])
    most = now = 0
    for _, step in edges:
        now += step
        most = max(most, now)
    return most


def test_due_occurrences_beyond_the_run_slots_are_queued_admitted_in_turn_and_all_run(nf):
    # every schedule falls due at the same second, a few seconds from now, once an hour after that
    due = (datetime.now(timezone.utc) + timedelta(seconds=12)).replace(microsecond=0)
    when = f"{due.minute} * * * * {due.second}"  # a sixth cron field counts seconds
    for agent, count in DUE.items():
        for n in range(count):
            definition = {"name": f"s{n}", "prompt": f"SLEEP {RUN_SECONDS}", "schedule": when}
            schedule(nf, agent, action="create", definition=definition)
    assert datetime.now(timezone.utc) < due, "creating the schedules took past their due time"

    seen_queued: Dict[str, Any] = {}
    status_queued = 0
    deadline = time.time() + 60
    while time.time() < deadline:
        status = run(nf.client, "get_status")["result"]["scheduler"]["agents"]
        status_queued = max(status_queued, sum(a["queued"] for a in status.values()))
        found = histories(nf)
        for key, runs in found.items():
            if runs and runs[0]["status"] == "queued":
                seen_queued.setdefault(key, runs[0])
        if all(any(r["status"] != "queued" for r in runs) for runs in found.values()):
            break
        time.sleep(0.2)

    # none lost: each occurrence ran once, ok, its queued record replaced by its run
    total = sum(DUE.values())
    for key, runs in found.items():
        assert [r["status"] for r in runs] == ["ok"], (key, runs)
        assert runs[0]["due"] == due.isoformat(timespec="milliseconds"), (key, runs)
    # queued state visible before the occurrences ran: in their history and in get_status
    assert len(seen_queued) >= total - 2 * SLOTS, seen_queued
    assert all("waiting for a free run slot" in r["note"] for r in seen_queued.values()), seen_queued
    assert status_queued >= total - 2 * SLOTS

    runs = run(nf.client, "get_runs", limit=100)["result"]["runs"]
    scheduled = [r for r in runs if r["schedule_id"]]
    assert len(scheduled) == total
    assert all(r["stop_reason"] == "completed" for r in scheduled), scheduled
    # the slots bound the runs: never more than SLOTS accepted-to-finished spans overlap
    spans = [(datetime.fromisoformat(r["started"]), datetime.fromisoformat(r["finished"])) for r in scheduled]
    assert overlap(spans) == SLOTS, spans
    # in turn: every light agent's runs started before the heavy agent's last two
    by_start = [r["agent"] for r in sorted(scheduled, key=lambda r: r["started"])]
    assert by_start[-2:] == [HEAVY, HEAVY], by_start
    waits = {
        agent: max(
            (datetime.fromisoformat(r["started"]) - due).total_seconds() for r in scheduled if r["agent"] == agent
        )
        for agent in DUE
    }
    assert max(waits[agent] for agent in LIGHT) < waits[HEAVY], waits
