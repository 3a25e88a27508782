"""
One fleet, one record: two hermes workers, each its own OS process, sharing a real PostgreSQL
(records.backend postgresql). A dedupe key and a daily budget hold across them; a change's device
lock excludes the other worker until the holder is killed (kill -9), and the change job it left
running on nornir excludes it until that job ends; the killed change is then outcome_unknown; the
dead worker's runs are in get_runs and handover meanwhile. Checked on the FakeNOS switch's own log
and the nornir worker's job store.
"""

import contextlib
import sqlite3
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime

import psycopg
import pytest
from conftest import eventually, hermes_worker, network, norfab, ok, result_of, run
from test_changes import ENABLE_PORT, PORT_STATE, call, changes_to, device_log, job_finished, jobs, switch

from norfab_hermes.routing import Hermes
from norfab_hermes.testing.embedded import kill_process_group, worker_process

ONE, TWO = "hermes-pg-1", "hermes-pg-2"
DSN_ENV = "NORFAB_HERMES_PG_DSN"
SLOW = "GigabitEthernet0/3"  # the switch takes 10 s to change it: the change job is in flight that long
TOOLS = {"port_state": PORT_STATE, "enable_port": ENABLE_PORT}
OPS = {"instructions": "You change ports.", "toolsets": ["norfab"], "run_timeout": 120, "tools": TOOLS}
AGENTS = {
    "ops": OPS,
    "quick": {**OPS, "changes": {"lock_wait": 0}},
    "alarm": {"instructions": "You investigate alarms.", "dedupe_window": 120},
    "daily": {"instructions": "You watch.", "hermes": {"model": {"default": "alpha-model"}}, "daily_tokens": 3000},
}


@dataclass
class Fleet:
    nf: object
    base: object
    dsn: str
    processes: dict  # worker name -> its OS process
    stack: contextlib.ExitStack  # worker processes started again, stopped with the module

    def start(self, *names):
        """Start the workers side by side (each imports Hermes: seconds of CPU)."""
        managers = [worker_process(self.nf, name) for name in names]
        with ThreadPoolExecutor(len(names)) as pool:
            started = list(pool.map(lambda manager: manager.__enter__(), managers))
        for name, manager, process in zip(names, managers, started):
            self.stack.push(manager.__exit__)
            self.processes[name] = process


@pytest.fixture(scope="module")
def fleet(model, postgres, tmp_path_factory):
    """The broker and nornir in this process; the two hermes workers each in a process of their own."""
    settings = {"records": {"backend": "postgresql", "dsn_env": DSN_ENV}}
    users = {name: hermes_worker(model.base_url, AGENTS, **settings) for name in (ONE, TWO)}
    slow = switch("sw1")
    slow["python"] = slow["python"].replace("SLOW_SECONDS = 5", "SLOW_SECONDS = 10")
    workers, files = network(["sw1"], models={"sw1": slow}, users=users)
    base = tmp_path_factory.mktemp("fleet")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(DSN_ENV, postgres)  # the worker processes inherit it: the DSN never is in the inventory
        with norfab(base, workers, files, separate=(ONE, TWO)) as nf, contextlib.ExitStack() as stack:
            found = Fleet(nf, base, postgres, {}, stack)
            found.start(ONE, TWO)
            yield found


@pytest.fixture(autouse=True)
def alive(fleet):
    """Both workers up at each test's start: a test that killed one and failed does not fail the next."""
    dead = [name for name, process in fleet.processes.items() if process.poll() is not None]
    if dead:
        fleet.start(*dead)


def test_fifty_start_runs_with_one_dedupe_key_split_across_two_workers_start_one_run(fleet):
    nf = fleet.nf
    futures = [
        nf.client.submit_job(
            "hermes",
            "start_run",
            kwargs={"agent": "alarm", "instructions": "STORM-9 r1 down SLEEP 1", "dedupe_key": "INC-9"},
            workers=[(ONE, TWO)[n % 2]],
            timeout=120,
        )
        for n in range(50)
    ]
    states = [ok(next(iter(future.result(timeout=120).values()))) for future in futures]
    assert len({state["run_id"] for state in states}) == 1
    assert sorted(state["deduplicated"] for state in states) == [False] + [True] * 49
    assert {state["worker"] for state in states} <= {ONE, TWO}
    replies = Hermes(nf.client).runs(agent="alarm", text="STORM-9")
    assert len(replies) == 1, "two workers of one record answer once"
    [page] = [ok(res) for res in replies.values()]
    assert page["total"] == 1 and page["record"]


def test_a_daily_budget_spent_on_one_worker_stops_the_agent_on_the_other(fleet):
    nf = fleet.nf
    results = []
    while not results or results[-1]["stop_reason"] != "daily_budget":
        assert len(results) < 8, [r["stop_reason"] for r in results]
        res = run(nf.client, "invoke", worker=ONE, job_timeout=120, agent="daily", instructions=f"look {len(results)}")
        results.append(ok(res))
    spent = ok(run(nf.client, "get_status", worker=ONE))["budgets"]["daily"]
    res = run(nf.client, "invoke", worker=TWO, job_timeout=120, agent="daily", instructions="look again")
    stopped = res["failed"] and res["result"]["code"] == "over_budget" or res["result"]["stop_reason"] == "daily_budget"
    assert stopped, res
    assert ok(run(nf.client, "get_status", worker=TWO))["budgets"]["daily"]["tokens"] == spent["tokens"]


def change(nf, worker, port, agent="ops"):
    """An interactive change of sw1's ``port`` on ``worker``, each approval question answered yes."""
    future = nf.client.submit_job(
        "hermes",
        "invoke",
        kwargs={"agent": agent, "instructions": call("enable_port", FB="sw1", port=port), "interactive": True},
        workers=worker,
        timeout=150,
    )
    for event in future.events(timeout=150):
        request = (event.get("extras") or {}).get("input_request")
        if event.get("event_type") == "input_request" and request:
            future.send_response(input_id=request["id"], value=True, worker=worker)
    return result_of(future, worker, timeout=60)["result"]


def cut_change(nf, worker, port):
    """A change on a worker the test kills: its job never returns."""
    with contextlib.suppress(AssertionError):
        change(nf, worker, port)


def sent_by(base, worker):
    """The configuration jobs, dry runs included, ``worker`` sent for sw1."""
    return [j for j in jobs(base, clients=(worker,)) if j[1] == "cfg" and j[2].get("FB") == "sw1"]


def nornir_times(base, uuid, worker="nornir-worker-1"):
    """When nornir started and completed job ``uuid`` (its job store's timestamps)."""
    with sqlite3.connect(base / f"__norfab__/files/worker/{worker}/{worker}.db") as db:
        [times] = db.execute("SELECT started_timestamp, completed_timestamp FROM jobs WHERE uuid = ?", (uuid,))
    return times


def test_a_killed_lock_holder_lets_the_other_worker_change_the_device_once_its_job_ended_and_is_outcome_unknown(
    fleet,
):
    nf, base = fleet.nf, fleet.base
    threading.Thread(target=cut_change, args=(nf, ONE, SLOW), daemon=True).start()
    # ONE's lock is the fleet's: TWO shows it
    [lock] = eventually(
        lambda: ok(run(nf.client, "get_status", worker=TWO))["changes"]["locks"], "TWO shows ONE's lock"
    )
    assert (lock["device"], lock["agent"]) == ("sw1", "ops")
    [(first, _, _)] = eventually(lambda: changes_to(base, "sw1", clients=(ONE,)), "ONE's change job", step=0.05)
    kill_process_group(fleet.processes[ONE])
    eventually(lambda: not ok(run(nf.client, "get_status", worker=TWO))["changes"]["locks"], "ONE's lock ended")
    # the lock ended with ONE, its change job did not: a change that may not wait is refused, naming the job
    [refused] = change(nf, TWO, "GigabitEthernet0/1", agent="quick")["tool_calls"]
    assert refused["status"] == "refused", refused
    assert first in refused["error"] and "still running on nornir" in refused["error"], refused
    assert not job_finished(base, first)
    assert sent_by(base, TWO) == [], "no job from TWO to sw1, not even a dry run"
    # one that may wait starts once ONE's job ended on nornir (NorFab 0.25's nornir keeps a job's rendered
    # config on the shared host object: a dry run overlapping it could swap the config sent)
    [made] = change(nf, TWO, "GigabitEthernet0/1")["tool_calls"]
    assert made["change"]["outcome"] == "verified", made
    assert device_log(nf, "sw1") == [
        "1 configure",
        f"2 no shutdown {SLOW}",
        "3 end",
        "4 configure",
        "5 no shutdown GigabitEthernet0/1",
        "6 end",
    ], "one change after the other on the switch"
    second = sent_by(base, TWO)[0][0]  # its dry run
    assert nornir_times(base, second)[0] >= nornir_times(base, first)[1], "TWO's first job started after ONE's ended"
    # while ONE is down the shared record answers for it; ONE, if the broker still listed it, is named as gone
    replies = Hermes(nf.client).runs(agent="ops")
    [page] = [ok(res) for res in replies.values() if not res["failed"]]
    assert all("did not answer get_runs" in res["errors"][0] for res in replies.values() if res["failed"])
    cut = next(r for r in page["runs"] if r["worker"] == ONE)
    assert cut["state"] != "finished"
    briefing = Hermes(nf.client).handover("alarm", agents=["ops"], since="1h", workers=[TWO])["result"]
    assert cut["run_id"] in [r["run_id"] for m in briefing["material"] for r in m["record_runs"]]
    # ONE comes back: its change in flight is recorded outcome_unknown, read from either worker
    fleet.start(ONE)
    ended = ok(run(nf.client, "get_run", worker=TWO, agent="ops", run_id=cut["run_id"]))
    assert ended["stop_reason"] == "outcome_unknown"
    assert ok(run(nf.client, "get_status", worker=ONE))["changes"]["outcome_unknown"]


def history(nf, worker, schedule_id):
    kwargs = dict(agent="alarm", action="history", schedule_id=schedule_id, limit=200)
    return ok(run(nf.client, "schedule", worker=worker, **kwargs))


def claimed(dsn):
    with psycopg.connect(dsn) as db:
        return db.execute(
            "SELECT due, worker FROM schedule_occurrences WHERE name = 'core-watch' ORDER BY due"
        ).fetchall()


def test_a_grouped_schedule_runs_each_occurrence_once_and_fails_over_when_its_runner_dies(fleet):
    """20 occurrences of a schedule both workers hold in group 'core': one worker runs each; the one running
    it killed midway, the other runs the next occurrence and every one after; no occurrence runs twice."""
    nf = fleet.nf
    definition = {"name": "core-watch", "prompt": "WATCH core", "schedule": "* * * * * *", "group": "core"}
    ids = {
        worker: ok(run(nf.client, "schedule", worker=worker, agent="alarm", action="create", definition=definition))
        for worker in (ONE, TWO)
    }
    ids = {worker: created["schedules"][0]["schedule_id"] for worker, created in ids.items()}

    def runner() -> str:  # the member that claimed the latest occurrence, once it claimed two (one it ran)
        got = [w for _, w in claimed(fleet.dsn)]
        return got[-1] if got and got.count(got[-1]) >= 2 else ""

    # which member wins a claim is a race (the first to tick): the one running the schedule is the one killed
    dead = eventually(runner, "a member runs the schedule")
    [live] = {ONE, TWO} - {dead}
    kill_process_group(fleet.processes[dead])
    killed = time.time()

    def after_kill(occurrences: list) -> list:  # who claimed each occurrence due after the kill
        return [w for due, w in occurrences if datetime.fromisoformat(due).timestamp() > killed + 1]

    # a loaded machine may claim 20 before the kill: some must come after it
    eventually(
        lambda: (lambda got: len(got) >= 20 and len(after_kill(got)) >= 3)(claimed(fleet.dsn)),
        "20 occurrences claimed, 3 of them after the kill",
    )
    ok(run(nf.client, "schedule", worker=live, agent="alarm", action="pause", schedule_id=ids[live]))
    occurrences = claimed(fleet.dsn)
    after = after_kill(occurrences)
    assert after and set(after) == {live}, "every occurrence after the kill runs on the live member"

    def recorded() -> list:  # the live member answers from the fleet's record: the dead one's runs too
        return [
            r
            for schedule_id in ids.values()
            for r in ok(Hermes(nf.client).runs(workers=live, agent="alarm", schedule_id=schedule_id, limit=200)[live])[
                "runs"
            ]
        ]

    # the last claimed occurrence's run is recorded (the killed member may have claimed one it never started)
    eventually(lambda: len(recorded()) >= len(occurrences) - 1, "every claimed occurrence's run recorded")
    runs = recorded()
    # one run per claimed occurrence, none twice; the killed member may have claimed one it never started
    assert len(occurrences) - 1 <= len(runs) <= len(occurrences), (len(runs), occurrences)
    seen = history(nf, live, ids[live])["history"]
    dues = [entry["due"] for entry in seen if entry["status"] != "missed"]
    assert len(dues) == len(set(dues)), "the live member's history lists each occurrence once"
    assert {r["worker"] for r in runs} == {ONE, TWO}, "each member ran some occurrences"
    # an occurrence that fell due while the live member's previous run still ran is not ticked there (Hermes
    # skips it)
    ran = [entry for entry in seen if entry["status"] != "missed"]
    assert all(entry["worker"] == live or entry["status"] == "skipped" for entry in ran), "history names the runner"
