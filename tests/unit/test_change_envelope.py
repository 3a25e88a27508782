"""The change envelope's state (no NorFab): device locks, breakers and hourly caps that survive a
restart, markers that become unknown outcomes, and the definitions that declare changes."""

import contextlib
import sqlite3
import threading
import time

import pytest

from norfab_hermes.errors import InventoryError, UnknownOutcome
from norfab_hermes.models import ChangePolicy, OutcomeUnknown, parse_agent
from norfab_hermes.worker.changes.control import ChangeControl
from norfab_hermes.worker.changes.locks import DeviceLocks, FleetDeviceLocks, Holder


def never() -> bool:
    return False


def test_a_change_takes_all_its_devices_or_none_and_names_the_holder():
    locks = DeviceLocks()
    first = Holder("run-a", "ops", "enable_port")
    assert locks.acquire(["sw1", "sw2"], first, 0, never) is None
    refusal = locks.acquire(["sw3", "sw2"], Holder("run-b", "noc", "clear_peer"), 0, never)
    assert refusal.startswith("device sw2 is being changed by run run-a of agent 'ops' (enable_port, since ")
    assert [lock.device for lock in locks.held()] == ["sw1", "sw2"], "sw3 was not taken: all or none"


def test_two_changes_of_one_run_do_not_share_a_device():
    locks = DeviceLocks()
    assert locks.acquire(["sw1"], Holder("run-a", "ops", "t"), 0, never) is None
    assert locks.acquire(["sw1"], Holder("run-a", "ops", "t"), 0, never) is not None


def test_a_waiting_change_gets_the_device_when_the_holder_releases_it():
    locks, first = DeviceLocks(), Holder("run-a", "ops", "t")
    locks.acquire(["sw1"], first, 0, never)
    threading.Timer(0.3, locks.release, args=(first,)).start()
    told = []
    assert locks.acquire(["sw1"], Holder("run-b", "ops", "t"), 10, never, told.append) is None
    assert [why.split(" (")[0] for why in told] == ["device sw1 is being changed by run run-a of agent 'ops'"]


def test_a_stopped_run_stops_waiting():
    locks = DeviceLocks()
    locks.acquire(["sw1"], Holder("run-a", "ops", "t"), 0, never)
    started = time.monotonic()
    assert locks.acquire(["sw1"], Holder("run-b", "ops", "t"), 30, lambda: True) is not None
    assert time.monotonic() - started < 5


class SharedRecord:
    """The fleet record's change_jobs table, in SQLite: what FleetDeviceLocks writes and reads between locks."""

    def __init__(self) -> None:
        self.db = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
        self.db.row_factory = sqlite3.Row
        self.db.execute(
            "CREATE TABLE change_jobs (job_uuid TEXT, device TEXT, worker TEXT, run_id TEXT, service TEXT, sent TEXT)"
        )

    @contextlib.contextmanager
    def transaction(self):
        yield self.db

    reading = transaction


def left_by_a_killed_worker(record: SharedRecord, devices=("sw1",)) -> None:
    FleetDeviceLocks(record, "hermes-1").sending("job-1", "nornir", list(devices), "run-a")


def test_a_fleet_change_waits_for_the_job_a_killed_holder_left_running_then_goes():
    record = SharedRecord()
    left_by_a_killed_worker(record)
    asked, ends = [], time.time() + 0.6
    told = []

    def pending(service, uuid):
        asked.append((service, uuid))
        return time.time() < ends

    locks = FleetDeviceLocks(record, "hermes-2")
    assert locks.wait_left(["sw2", "sw1"], pending, time.time() + 10, never, told.append) is None
    assert asked[0] == ("nornir", "job-1") and len(asked) >= 2, "it asked nornir again until the job ended"
    assert told == [
        "device sw1 has change job job-1 of run run-a (worker hermes-1, which no longer holds the device) "
        "still running on nornir"
    ]
    assert record.db.execute("SELECT count(*) FROM change_jobs").fetchone()[0] == 0, "the ended job is removed"


@pytest.mark.parametrize(
    "answer, state", [(True, "still running"), (None, "not known to have ended (not every worker answered)")]
)
def test_a_fleet_change_is_refused_at_its_deadline_naming_the_job_left_behind(answer, state):
    record = SharedRecord()
    left_by_a_killed_worker(record, ("sw1", "sw2"))
    locks = FleetDeviceLocks(record, "hermes-2")
    refusal = locks.wait_left(["sw2"], lambda service, uuid: answer, time.time() + 0.3, never, lambda why: None)
    assert refusal.startswith("device sw2 has change job job-1 of run run-a (worker hermes-1, which no longer ")
    assert f"{state} on nornir; waited " in refusal
    assert record.db.execute("SELECT count(*) FROM change_jobs").fetchone()[0] == 2, "a job not ended stays listed"


def test_a_job_left_on_several_devices_is_asked_about_once():
    record = SharedRecord()
    left_by_a_killed_worker(record, ("sw1", "sw2"))
    asked = []
    locks = FleetDeviceLocks(record, "hermes-2")
    assert locks.wait_left(["sw1", "sw2"], lambda *job: asked.append(job) or False, time.time(), never, print) is None
    assert asked == [("nornir", "job-1")]
    assert record.db.execute("SELECT count(*) FROM change_jobs").fetchone()[0] == 0


def test_a_change_job_whose_reply_was_read_is_no_longer_listed():
    record = SharedRecord()
    left_by_a_killed_worker(record)
    FleetDeviceLocks(record, "hermes-1").settled("job-1")
    assert FleetDeviceLocks(record, "hermes-2").wait_left(["sw1"], lambda *a: True, 0, never, print) is None


def test_the_breaker_opens_after_failures_in_a_row_and_survives_a_restart(tmp_path):
    control = ChangeControl(tmp_path, "hermes-1")
    assert control.breakers.record("ops", False, 2) is None
    assert control.breakers.record("ops", True, 2) is None, "a passed verification starts the count again"
    control.breakers.record("ops", False, 2)
    assert "2 verifications of agent 'ops' failed in a row" in control.breakers.record("ops", False, 2)
    again = ChangeControl(tmp_path, "hermes-1")
    refusal = again.refusal("ops", ChangePolicy(), "t", [], ["sw1"])
    assert refusal.startswith("changes of agent 'ops' are stopped: 2 verifications failed in a row")
    state = again.reset_breaker("ops", ChangePolicy(breaker_after=2), "op-1", "fixed")
    assert (state.open, state.failures, state.reset_by) == (False, 0, "op-1")
    assert ChangeControl(tmp_path, "hermes-1").refusal("ops", ChangePolicy(), "t", [], ["sw1"]) is None


def test_the_hourly_cap_counts_across_a_restart(tmp_path):
    policy = ChangePolicy(max_per_hour=2)
    control = ChangeControl(tmp_path, "hermes-1")
    control.limits.count("ops")
    control.limits.count("ops")
    refusal = ChangeControl(tmp_path, "hermes-1").refusal("ops", policy, "t", [], [])
    assert refusal.startswith("agent 'ops' made 2 changes in the last hour, its limit")
    assert control.refusal("noc", policy, "t", [], []) is None


def test_a_tool_window_applies_on_top_of_the_agent_window(tmp_path):
    control = ChangeControl(tmp_path, "hermes-1")
    day = time.strftime("%a", time.gmtime(time.time() + 2 * 86400)).lower()
    assert control.refusal("ops", ChangePolicy(), "t", [f"{day} 00:00-00:01"], []).startswith("tool t change windows")


def change(job, devices, run="run-a", session="s-1"):
    return OutcomeUnknown(
        outcome_id=job,
        job_uuid=job,
        run_id=run,
        agent="ops",
        worker="hermes-1",
        session_id=session,
        tool="enable_port",
        target="nornir.cfg on all",
        devices=devices,
        started="2026-11-30T09:00:00",
        reason="x",
    )


def test_a_marker_left_by_a_crash_becomes_an_unknown_outcome_that_blocks_its_devices(tmp_path):
    control = ChangeControl(tmp_path, "hermes-1")
    control.outcomes.begin(change("job-1", ["sw1"]))
    control.outcomes.begin(change("job-2", ["sw2"]))
    control.outcomes.end("job-2")  # its reply was read
    restarted = ChangeControl(tmp_path, "hermes-1")
    [found] = restarted.outcomes.recover()
    assert (found.job_uuid, found.reason) == (
        "job-1",
        "the hermes worker stopped while the change job was in flight; it may or may not have run",
    )
    assert restarted.outcomes.recover() == [], "a marker becomes a record once"
    assert restarted.refusal("ops", ChangePolicy(), "t", [], ["sw2"]) is None
    assert "device sw1 has a change of unknown outcome (job job-1, run run-a)" in restarted.refusal(
        "noc", ChangePolicy(), "t", [], ["sw1"]
    )
    assert [c.job_uuid for c in ChangeControl(tmp_path, "hermes-1").outcomes.pending(run_id="run-a")] == ["job-1"]
    acknowledged = restarted.acknowledge("job-1", "op-1", "port is up")
    assert (acknowledged.acknowledged_by, acknowledged.note) == ("op-1", "port is up")
    assert ChangeControl(tmp_path, "hermes-1").outcomes.pending() == []
    with pytest.raises(UnknownOutcome):
        restarted.acknowledge("job-1", "op-1", None)


BASE = {"instructions": "x", "toolsets": ["norfab"]}
READ = {"norfab": {"service": "nornir", "task": "cli"}}
CHANGE = {
    "approval": True,
    "input_schema": {"type": "object", "properties": {"FB": {}}},
    "norfab": {"service": "nornir", "task": "cfg"},
}


@pytest.mark.parametrize(
    "tools, error",
    [
        (
            {"t": {**READ, "verify": {"tool": "t", "expect": {"contains": ["x"]}}}},
            "field 'tools.t': Value error, verify: only for tools that change devices",
        ),
        (
            {"t": {**CHANGE, "norfab": {"service": "nornir", "task": "cli"}, "preview": {"dry_run": True}}},
            "preview dry_run is nornir cfg's dry run",
        ),
        (
            {"t": {**CHANGE, "verify": {"tool": "t", "expect": {"contains": ["x"]}}}},
            "tools.t.verify: 't' is not a read-only tool of this agent",
        ),
        (
            {"r": READ, "t": {**CHANGE, "verify": {"tool": "r", "arguments": ["port"], "expect": {"contains": ["x"]}}}},
            "tools.t: preview, verify or rollback use port",
        ),
        (
            {"r": READ, "t": {**CHANGE, "rollback": {"commands": ["interface ${port}"]}}},
            "use port, not arguments in its input_schema",
        ),
        ({"t": {**CHANGE, "verify": {"tool": "t", "expect": {}}}}, "expect needs contains, absent or matches"),
        ({"t": {**CHANGE, "windows": ["someday 01:00-02:00"]}}, "'someday' is not a day"),
    ],
)
def test_a_change_definition_that_cannot_work_is_refused_naming_the_field(tools, error):
    with pytest.raises(InventoryError, match=error.replace("(", "\\(").replace("$", "\\$").replace("{", "\\{")):
        parse_agent("ops", {**BASE, "tools": tools})


def test_a_workflow_tool_pins_an_nf_file_and_takes_no_guarded_variable():
    with pytest.raises(InventoryError, match="'/tmp/x.yaml' must be an nf:// file"):
        parse_agent("ops", {**BASE, "workflows": {"w": {"file": "/tmp/x.yaml"}}})
    with pytest.raises(InventoryError, match="sha256 must be 64 lowercase hex digits"):
        parse_agent("ops", {**BASE, "workflows": {"w": {"file": "nf://x.yaml", "sha256": "abc"}}})
    with pytest.raises(InventoryError, match="offers 'tests'"):
        parse_agent(
            "ops",
            {
                **BASE,
                "workflows": {
                    "w": {"file": "nf://x.yaml", "input_schema": {"type": "object", "properties": {"tests": {}}}}
                },
            },
        )
    with pytest.raises(InventoryError, match="w named both under tools and under workflows"):
        parse_agent("ops", {**BASE, "tools": {"w": READ}, "workflows": {"w": {"file": "nf://x.yaml"}}})


def test_a_run_holds_its_changes_and_gets_back_one_not_sent():
    from norfab_hermes.worker.runs.budget import Budget, Limits

    budget = Budget(Limits(seconds=60, max_turns=5, max_changes=1))
    assert budget.reserve_change() is None
    assert budget.reserve_change() == "the run has made its 1 change(s) (changes.max_per_run)"
    budget.release_change()  # refused or declined: never sent
    assert budget.reserve_change() is None
