"""
More schedules due at once than the worker has run slots, on a real NorFab:
every occurrence runs (none lost), the ones waiting are `queued` in their
history first, agents are admitted in turn (the agent with most due does not
go first with all of them), and no more runs overlap than the slots; the
ones still queued when the worker stops, or is killed, are recorded skipped.
"""

import signal
import time
from datetime import datetime, timedelta, timezone
from typing import Any, Dict, List

from conftest import Lab, hermes_worker, norfab, run

from norfab_hermes.testing.embedded import kill_process_group, most_at_once, worker_process

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
    assert most_at_once(spans) == SLOTS, spans
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


def due_together(nf: Any, agent: str, names: List[str], prompt: str, ahead: float = 8) -> None:
    """Schedules of ``agent`` all due in the same second, ``ahead`` seconds from now."""
    due = (datetime.now(timezone.utc) + timedelta(seconds=ahead)).replace(microsecond=0)
    for name in names:
        definition = {"name": name, "prompt": prompt, "schedule": f"{due.minute} * * * * {due.second}"}
        schedule(nf, agent, action="create", definition=definition)


def statuses(nf: Any, agent: str, names: List[str]) -> Dict[str, List[str]]:
    return {n: [r["status"] for r in schedule(nf, agent, action="history", schedule_id=n)["history"]] for n in names}


def wait_until(check: Any, timeout: float = 40) -> Any:
    deadline = time.time() + timeout
    while time.time() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.3)
    raise AssertionError("timed out")


def test_occurrences_queued_when_the_worker_stops_or_is_killed_are_recorded_skipped(model, tmp_path):
    """One run slot, three due at once: the two queued are skipped with the reason at a graceful stop,
    and after a kill -9 at the next start; none is run twice, none vanishes."""
    inventory = hermes_worker(model.base_url, {"a": {"instructions": "You check."}}, max_concurrent_runs=1)
    with norfab(tmp_path, {WORKER: inventory}, separate=(WORKER,)) as nf:
        stopped, killed = ["g0", "g1", "g2"], ["k0", "k1", "k2"]
        with worker_process(nf, WORKER):
            due_together(nf, "a", stopped, "SLEEP 30")
            wait_until(
                lambda: sorted(s[:1] for s in statuses(nf, "a", stopped).values()) == [[], ["queued"], ["queued"]]
            )
        with worker_process(nf, WORKER) as process:
            after_stop = statuses(nf, "a", stopped)
            due_together(nf, "a", killed, "SLEEP 30")
            wait_until(
                lambda: sorted(s[:1] for s in statuses(nf, "a", killed).values()) == [[], ["queued"], ["queued"]]
            )
            kill_process_group(process, signal.SIGKILL)
        with worker_process(nf, WORKER):
            after_kill = {n: schedule(nf, "a", action="history", schedule_id=n)["history"] for n in killed}
    # the graceful stop recorded its queued two as skipped itself (the running one was interrupted)
    assert sorted(after_stop.values()) == [["interrupted"], ["skipped"], ["skipped"]], after_stop
    # after the kill the next start found the queued two and recorded them skipped, saying so
    skipped = [runs for runs in after_kill.values() if runs and runs[0]["status"] == "skipped"]
    assert len(skipped) == 2, after_kill
    for [run_] in skipped:
        assert (
            run_["note"]
            == "the worker stopped while it was queued for a run slot: not run (found at the worker's next start)"
        )
        assert run_["started"] is None
