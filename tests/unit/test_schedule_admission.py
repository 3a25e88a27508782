"""Fair admission of due occurrences to run slots with fake slots: the round-robin order, the bound, stops,
and the ticker's queued, replaced and skipped history entries (a fake Hermes cron seam, no NorFab)."""

import threading
import time
from datetime import datetime, timezone
from types import SimpleNamespace
from typing import Any, List

import pytest

from norfab_hermes.models import InvokeResultData, ScheduleRun
from norfab_hermes.worker.evidence.store import EvidenceStore
from norfab_hermes.worker.schedules import admission as admission_module
from norfab_hermes.worker.schedules import ticker
from norfab_hermes.worker.schedules.admission import Admission, RoundRobin
from norfab_hermes.worker.schedules.history import ScheduleHistory, iso, settled

from .test_schedules import AGENT, FakeCron, every_minute


class Slots:
    """A worker's run slots as a counter: how many are free, the most ever taken at once."""

    def __init__(self, free: int) -> None:
        self.free, self.taken, self.most = free, 0, 0
        self.lock = threading.Lock()

    def take(self) -> bool:
        with self.lock:
            if self.free == 0:
                return False
            self.free, self.taken = self.free - 1, self.taken + 1
            self.most = max(self.most, self.taken)
            return True

    def give(self) -> None:
        with self.lock:
            self.free, self.taken = self.free + 1, self.taken - 1


def test_round_robin_takes_one_agent_at_a_time_in_turn():
    """Each agent's oldest first, agents in turn: the agent with most waiting does not go first twice."""
    queue: RoundRobin[str] = RoundRobin()
    for agent, item in [("a", "a1"), ("a", "a2"), ("a", "a3"), ("b", "b1"), ("c", "c1"), ("c", "c2")]:
        queue.add(agent, item)
    assert queue.waiting() == {"a": 3, "b": 1, "c": 2}
    assert len(queue) == 6
    taken = [queue.take() for _ in range(6)]
    assert [item for _, item in taken] == ["a1", "b1", "c1", "a2", "c2", "a3"]
    assert queue.take() is None
    assert len(queue) == 0


def test_round_robin_an_agent_back_in_the_queue_waits_its_turn():
    """An agent whose queue emptied goes to the end when it has more; one still waiting keeps its place."""
    queue: RoundRobin[str] = RoundRobin()
    queue.add("a", "a1")
    queue.add("b", "b1")
    queue.add("b", "b2")
    assert queue.take() == ("a", "a1")
    queue.add("a", "a2")
    assert [queue.take() for _ in range(3)] == [("b", "b1"), ("a", "a2"), ("b", "b2")]


def test_round_robin_remove_drops_only_that_item():
    queue: RoundRobin[str] = RoundRobin()
    queue.add("a", "a1")
    queue.add("a", "a2")
    assert queue.remove("a", "a1") is True
    assert queue.remove("a", "a1") is False
    assert queue.remove("nobody", "x") is False
    assert queue.take() == ("a", "a2")
    assert queue.waiting() == {}


def test_admission_admits_at_once_while_slots_are_free():
    slots = Slots(1)
    admission = Admission(slots.take, slots.give)
    ticket, ahead = admission.enter("a")
    assert ticket.admitted.is_set() and ahead == 0
    waiting, ahead = admission.enter("b")
    assert not waiting.admitted.is_set() and ahead == 0
    assert admission.waiting() == {"b": 1}
    admission.leave()  # a's run ended: its slot goes to b
    assert waiting.admitted.is_set()
    assert admission.waiting() == {}


def test_admission_frees_slots_to_agents_in_turn():
    """With no slot free, tickets entered agent by agent are admitted round-robin as slots free."""
    slots = Slots(0)
    admission = Admission(slots.take, slots.give)
    tickets = {name: admission.enter(name[0])[0] for name in ["a1", "a2", "a3", "b1", "c1", "c2"]}
    assert admission.enter("d")[1] == 6  # six ahead of it
    order: List[str] = []
    for _ in range(7):
        slots.give()  # a run of some other kind ended
        admission.freed()
        admitted = [name for name, t in tickets.items() if t.admitted.is_set() and name not in order]
        order += admitted
    assert order == ["a1", "b1", "c1", "a2", "c2", "a3"]


def test_admission_never_runs_more_than_the_slots_and_loses_none():
    """Twelve occurrences of four agents over two slots, from threads: at most two at once, every one runs."""
    slots = Slots(2)
    admission = Admission(slots.take, slots.give, poll=0.05)
    ran: List[str] = []

    def occurrence(name: str) -> None:
        ticket, _ = admission.enter(name[0])
        assert admission.wait(ticket, lambda: False)
        try:
            time.sleep(0.01)
            ran.append(name)
        finally:
            admission.leave()

    names = [f"{agent}{n}" for agent in "abcd" for n in range(3)]
    threads = [threading.Thread(target=occurrence, args=(name,)) for name in names]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert sorted(ran) == sorted(names)
    assert slots.most == 2
    assert slots.taken == 0


def test_a_waiting_ticket_leaves_the_queue_when_stopped():
    slots = Slots(0)
    admission = Admission(slots.take, slots.give, poll=0.01)
    ticket, _ = admission.enter("a")
    assert admission.wait(ticket, lambda: True) is False
    assert admission.waiting() == {}
    slots.give()
    admission.freed()
    assert slots.free == 1, "a stopped ticket took a slot"


def test_settled_drops_queued_records_replaced_by_their_run():
    """A queued record is hidden once its occurrence (schedule and due time) is recorded again."""
    runs = [
        ScheduleRun(schedule_id="s", status="queued", due="t1"),
        ScheduleRun(schedule_id="s", status="queued", due="t2"),
        ScheduleRun(schedule_id="s", status="ok", due="t1", run_id="r1"),
    ]
    assert [(r.status, r.due) for r in settled(runs)] == [("queued", "t2"), ("ok", "t1")]


def test_settle_queued_records_the_stale_ones_as_skipped(tmp_path):
    told: List[str] = []
    history = ScheduleHistory("w", lambda agent: tmp_path / agent, lambda agent, run, runs: told.append(run.status))
    history.record(AGENT, ScheduleRun(schedule_id="s", status="queued", due="t1"))
    history.record(AGENT, ScheduleRun(schedule_id="s", status="queued", due="t2"))
    history.record(AGENT, ScheduleRun(schedule_id="s", status="ok", due="t1"))
    assert history.settle_queued(AGENT, "stopped") == 1
    assert [(r.status, r.due, r.note) for r in history.runs(AGENT, "s", 10)] == [
        ("skipped", "t2", "stopped"),
        ("ok", "t1", None),
    ]
    assert told == ["ok", "skipped"], "a queued record is not told to the notifier"
    assert history.settle_queued(AGENT, "stopped") == 0


def answer(run_id: str) -> InvokeResultData:
    return InvokeResultData(
        response="fine", run_id=run_id, session_id="s-1", agent=AGENT, worker="w", stop_reason="completed"
    )


@pytest.fixture
def admitted(tmp_path, monkeypatch):
    """A ticker over one free slot, whose runs wait for ``release`` before they answer."""
    monkeypatch.setattr(ticker, "cron", FakeCron())
    catalog = SimpleNamespace(root=tmp_path, stopped=set(), agents={AGENT: None}, available=lambda: [AGENT])
    slots = Slots(1)
    release = threading.Event()
    held: List[Any] = []

    def run_scheduled(agent, prompt, schedule_id, response_schema=None, slot_held=False):
        held.append(slot_held)
        release.wait(10)
        return answer(f"run-{len(held)}")

    schedules = ticker.Schedules(
        "w",
        catalog,
        runtime=None,
        run_scheduled=run_scheduled,
        evidence=EvidenceStore(tmp_path, 30, lambda run: None),
        admission=Admission(slots.take, slots.give, poll=0.01),
    )
    schedules.slots, schedules.release, schedules.held = slots, release, held
    return schedules


def wait_for(check, timeout=5.0):
    deadline = time.time() + timeout
    while not check() and time.time() < deadline:
        time.sleep(0.01)
    assert check()


def test_an_occurrence_beyond_the_free_slots_is_queued_then_replaced_by_its_run(admitted):
    due = datetime.now(timezone.utc)
    first = threading.Thread(target=admitted._execute, args=(every_minute(due, id="j1"),))
    second = threading.Thread(target=admitted._execute, args=(every_minute(due, id="j2"),))
    first.start()
    wait_for(lambda: admitted.held == [True])
    second.start()
    wait_for(lambda: [r.status for r in admitted.history.runs(AGENT, "j2", 10)] == ["queued"])
    [queued] = admitted.history.runs(AGENT, "j2", 10)
    assert queued.due == iso(due)
    assert "waiting for a free run slot, 0 due occurrence(s) ahead" in queued.note
    assert admitted.status().agents[AGENT].queued == 1
    assert admitted.held == [True], "the second ran while the only slot was taken"
    admitted.release.set()
    first.join(5)
    second.join(5)
    [ran] = admitted.history.runs(AGENT, "j2", 10)
    assert (ran.status, ran.run_id, ran.due) == ("ok", "run-2", iso(due))
    assert admitted.held == [True, True]
    assert admitted.slots.taken == 0
    assert admitted.status().agents[AGENT].queued == 0


def test_an_occurrence_still_queued_when_the_worker_stops_is_skipped_with_the_reason(admitted):
    due = datetime.now(timezone.utc)
    admitted.slots.free = 0
    ok, document, response, error = threading_result(admitted, every_minute(due), stop_after=0.1)
    assert ok is False
    assert "stopped while it was queued" in error
    [skipped] = admitted.history.runs(AGENT, "j1", 10)
    assert (skipped.status, skipped.started, skipped.due) == ("skipped", None, iso(due))
    assert skipped.note == ticker.STOPPED_QUEUED
    assert admitted.held == [], "a skipped occurrence ran"


def threading_result(schedules: ticker.Schedules, job: Any, stop_after: float) -> Any:
    outcome: List[Any] = []
    thread = threading.Thread(target=lambda: outcome.append(schedules._execute(job)))
    thread.start()
    time.sleep(stop_after)
    schedules._stop.set()
    thread.join(5)
    return outcome[0]


def test_queued_occurrences_left_by_a_crash_are_skipped_at_the_next_start(admitted, monkeypatch):
    """A queued record with no run after it (the worker died) is recorded skipped when the ticker starts."""
    admitted.history.record(AGENT, ScheduleRun(schedule_id="j1", status="queued", due="2026-12-01T08:00:00.000+00:00"))
    monkeypatch.setattr(ticker.cron, "run_jobs_with", lambda execute: None, raising=False)
    monkeypatch.setattr(ticker.cron, "size_pool", lambda threads: None, raising=False)
    monkeypatch.setattr(admitted, "_loop", lambda: None)
    admitted.start()
    admitted.stop()
    [skipped] = admitted.history.runs(AGENT, "j1", 10)
    assert skipped.status == "skipped"
    assert skipped.note.startswith(ticker.STOPPED_QUEUED)
    assert "next start" in skipped.note


def test_the_registry_lends_its_run_slots_to_admission(tmp_path):
    """take_slot never waits; give_slot tells admission; a run admitted with a slot uses it, not another."""
    from norfab_hermes.worker.runs.registry import RunRegistry

    registry = RunRegistry("w", tmp_path, 2)
    freed: List[int] = []
    registry.freed = lambda: freed.append(1)
    assert registry.take_slot() and registry.take_slot()
    assert registry.take_slot() is False
    with registry.slot(SimpleNamespace(slot_held=True)):  # would wait (and fail) if it asked for a third slot
        pass
    registry.give_slot()
    assert freed == [1]
    assert registry.take_slot()


def test_a_held_admission_queues_everyone_then_takes_them_in_turn():
    """While the ticker hands a batch over nobody is admitted, even with slots free; then in turn."""
    slots = Slots(2)
    admission = Admission(slots.take, slots.give)
    admission.hold()
    tickets = [(name, admission.enter(name[0])[0]) for name in ["a1", "a2", "a3", "b1", "c1"]]
    assert not any(t.admitted.is_set() for _, t in tickets)
    admission.resume()
    assert [name for name, t in tickets if t.admitted.is_set()] == ["a1", "b1"]
    admission.leave()
    assert [name for name, t in tickets if t.admitted.is_set()] == ["a1", "b1", "c1"]


def test_the_ticker_holds_admission_until_a_batch_reached_it(admitted, monkeypatch):
    """Several agents due: admission is held while their stores are ticked, until their jobs arrived."""
    held: List[int] = []
    monkeypatch.setattr(admitted.admission, "hold", lambda: held.append(1))
    monkeypatch.setattr(admitted.admission, "resume", lambda: held.append(-1))

    during: List[List[int]] = []

    def tick(agent: str) -> int:
        during.append(list(held))
        admitted.admission.arrived()
        return 1

    monkeypatch.setattr(admitted, "_tick", tick)
    started = time.monotonic()
    admitted._tick_all(["a", "b", "c"])
    assert held == [1, -1]
    assert during == [[1]] * 3, "ticked before admission was held"
    assert time.monotonic() - started < admission_module.HAND_OVER, "waited although every job arrived"
    admitted._tick_all(["a"])  # one agent due: its jobs are admitted as they come
    assert held == [1, -1]


def test_the_shell_shows_a_queued_occurrence_with_how_many_wait_ahead():
    """hermes history: a queued occurrence in yellow, its note as the finding, at 80 columns."""
    from rich.console import Console

    from norfab_hermes.models import ScheduleInfo, ScheduleResultData
    from norfab_hermes.nfcli.schedules import history_view, status_text

    info = ScheduleInfo(
        schedule_id="j1", name="r1-watch", agent=AGENT, worker="w", prompt="p", schedule="every 5m",
        state="scheduled", origin="norfab",
    )  # fmt: skip
    queued = ScheduleRun(
        schedule_id="j1",
        status="queued",
        due=iso(datetime.now(timezone.utc)),
        note="waiting for a free run slot, 7 due occurrence(s) ahead of it",
    )
    data = ScheduleResultData(action="history", agent=AGENT, worker="w", schedules=[info], history=[queued])
    console = Console(width=80, record=True)
    console.print(history_view(SimpleNamespace(agent=AGENT, worker="w"), data))
    text = console.export_text()
    assert "│ queued " in text
    out = " ".join(text.replace("│", " ").split())  # the finding wraps over lines
    assert "waiting for a free run slot, 7 due occurrence(s) ahead of it" in out, out
    assert status_text("queued").style == "yellow"


def test_a_stop_returns_once_the_queued_occurrences_are_recorded_skipped(admitted):
    admitted.slots.free = 0
    admitted.admission.poll = 0.2
    thread = threading.Thread(target=admitted._execute, args=(every_minute(datetime.now(timezone.utc)),))
    thread.start()
    wait_for(lambda: [r.status for r in admitted.history.runs(AGENT, "j1", 10)] == ["queued"])
    admitted.stop()
    assert [r.status for r in admitted.history.runs(AGENT, "j1", 10)] == ["skipped"]
    thread.join(5)
