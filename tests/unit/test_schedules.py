"""Schedule maths with a fake Hermes cron seam: due times, missed runs, outcomes and the run history."""

import os
from datetime import datetime, timedelta, timezone
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Dict, List, Optional

import pytest

from norfab_hermes.models import InvokeResultData, ScheduleRun
from norfab_hermes.worker.evidence.store import EvidenceStore
from norfab_hermes.worker.hermes import cron
from norfab_hermes.worker.schedules import history as history_module
from norfab_hermes.worker.schedules import ticker
from norfab_hermes.worker.schedules.admission import Admission
from norfab_hermes.worker.schedules.history import ScheduleHistory, iso, newest, parse_time

AGENT = "interfaces"


def test_times_are_kept_as_utc_iso_with_milliseconds():
    """iso() writes UTC with milliseconds; parse_time() reads it back and takes a naive time as UTC."""
    moment = datetime(2026, 12, 1, 10, 30, 5, 123456, tzinfo=timezone(timedelta(hours=2)))
    assert iso(moment) == "2026-12-01T08:30:05.123+00:00"
    assert parse_time(iso(moment)) == datetime(2026, 12, 1, 8, 30, 5, 123000, tzinfo=timezone.utc)
    assert parse_time("2026-12-01T08:30:05") == datetime(2026, 12, 1, 8, 30, 5, tzinfo=timezone.utc)
    assert iso(None) is None


@pytest.mark.parametrize("text", [None, "", "tomorrow", 42])
def test_unreadable_times_are_none(text):
    """A missing or unreadable time is None, never an error."""
    assert parse_time(text) is None


@pytest.mark.parametrize(
    "job, expected",
    [({}, True), ({"enabled": False}, False), ({"state": "paused"}, False), ({"state": "scheduled"}, True)],
)
def test_a_job_is_enabled_unless_disabled_or_paused(job, expected):
    """A job counts as enabled unless Hermes disabled or paused it."""
    assert cron.job({"id": "j1", **job}).enabled is expected


def test_a_hermes_job_becomes_a_typed_record():
    """The seam reads a Hermes job dict into a CronJob: name, runs, repeat, origin and the fields that reach the host."""
    raw = {"id": "j1", "prompt": "p", "repeat": {"times": 5, "completed": 2}, "origin": {"chat_id": "c-1"}}
    scheduled = cron.job({**raw, "script": "x.sh", "schedule": {"display": "every 5m"}})
    assert scheduled.name == "j1"
    assert (scheduled.runs, scheduled.repeat_times) == (2, 5)
    assert scheduled.origin_chat_id == "c-1"
    assert scheduled.display == "every 5m"
    assert scheduled.host_fields == ["script"]


def test_newest_keeps_the_newest_runs_of_every_schedule_in_order():
    """newest() keeps the last ``kept`` runs of each schedule, in their original order."""
    runs = [ScheduleRun(schedule_id=s, status="ok", run_id=f"{s}{n}") for n, s in enumerate("aabab")]
    assert [r.run_id for r in newest(runs, 1)] == ["a3", "b4"]
    assert [r.run_id for r in newest(runs, 2)] == ["a1", "b2", "a3", "b4"]


def store(tmp_path: Path) -> ScheduleHistory:
    return ScheduleHistory("hermes-worker-1", lambda agent: tmp_path / agent)


def test_history_lists_runs_newest_first_by_schedule(tmp_path):
    """Recorded runs come back newest first, for one schedule or all, up to the limit."""
    history = store(tmp_path)
    for n, schedule in enumerate(["a", "b", "a"]):
        history.record(AGENT, ScheduleRun(schedule_id=schedule, status="ok", run_id=f"r{n}"))
    assert [r.run_id for r in history.runs(AGENT, None, 10)] == ["r2", "r1", "r0"]
    assert [r.run_id for r in history.runs(AGENT, "a", 10)] == ["r2", "r0"]
    assert [r.run_id for r in history.runs(AGENT, None, 1)] == ["r2"]
    assert history.runs("other-agent", None, 10) == []


def test_history_skips_an_unreadable_line(tmp_path):
    """A corrupt line in the history file is skipped; the runs around it are kept."""
    history = store(tmp_path)
    history.record(AGENT, ScheduleRun(schedule_id="a", status="ok", run_id="r0"))
    with (tmp_path / AGENT / "cron" / history_module.HISTORY_FILE).open("a") as file:
        file.write("{not json\n")
    history.record(AGENT, ScheduleRun(schedule_id="a", status="ok", run_id="r1"))
    assert [r.run_id for r in history.runs(AGENT, "a", 10)] == ["r1", "r0"]


def test_history_is_pruned_to_the_newest_runs_per_schedule(tmp_path, monkeypatch):
    """After HISTORY_KEPT records the file keeps only the newest HISTORY_KEPT runs of each schedule."""
    monkeypatch.setattr(history_module, "HISTORY_KEPT", 3)
    history = store(tmp_path)
    history.record(AGENT, ScheduleRun(schedule_id="b", status="ok", run_id="b0"))
    for n in range(5):
        history.record(AGENT, ScheduleRun(schedule_id="a", status="ok", run_id=f"a{n}"))
    assert [r.run_id for r in history.runs(AGENT, "a", 10)] == ["a4", "a3", "a2"]
    assert [r.run_id for r in history.runs(AGENT, "b", 10)] == ["b0"]


def test_forget_drops_only_the_removed_schedules_runs(tmp_path):
    """Removing a schedule drops its runs and keeps the others'."""
    history = store(tmp_path)
    history.record(AGENT, ScheduleRun(schedule_id="a", status="ok", run_id="a0"))
    history.record(AGENT, ScheduleRun(schedule_id="b", status="ok", run_id="b0"))
    history.forget(AGENT, "a")
    assert [r.run_id for r in history.runs(AGENT, None, 10)] == ["b0"]


class FakeCron:
    """The Hermes cron seam as data: every job recurs every ``minutes`` with a fixed grace period."""

    def __init__(self, jobs: Optional[List[Dict[str, Any]]] = None) -> None:
        self.jobs = jobs or []
        self.listed = 0

    def list_jobs(self, home: Path) -> List[cron.CronJob]:
        self.listed += 1
        return [cron.job(raw) for raw in self.jobs]

    def next_run(self, schedule: Dict[str, Any], after: str) -> str:
        return (parse_time(after) + timedelta(minutes=schedule["minutes"])).isoformat()

    def grace_seconds(self, schedule: Dict[str, Any]) -> int:
        return 120

    def active_profile(self) -> str:
        return AGENT

    def job_prompt(self, scheduled: cron.CronJob) -> Optional[str]:
        return None

    def is_silent(self, text: str) -> bool:
        return text.strip() == "[SILENT]"


def every_minute(due: datetime, **fields: Any) -> cron.CronJob:
    """A Hermes job due at ``due`` that recurs every minute."""
    schedule = {"kind": "interval", "minutes": 1}
    raw = {"id": "j1", "name": "r1-watch", "prompt": "check r1", "next_run_at": iso(due), "schedule": schedule}
    return cron.job({**raw, **fields})


def answer(response: str = "all interfaces up", stop_reason: str = "completed") -> InvokeResultData:
    return InvokeResultData(
        response=response, run_id="run-1", session_id="s-1", agent=AGENT, worker="w", stop_reason=stop_reason
    )


@pytest.fixture
def schedules(tmp_path, monkeypatch):
    """The ticker of one agent with the fake cron seam; runs answer what ``schedules.reply`` holds."""
    cron = FakeCron()
    monkeypatch.setattr(ticker, "cron", cron)
    catalog = SimpleNamespace(root=tmp_path, stopped=set(), agents={AGENT: None}, available=lambda: [AGENT])
    asked = []

    def run_scheduled(
        agent: str, prompt: str, schedule_id: str, response_schema: Any = None, slot_held: bool = False
    ) -> InvokeResultData:
        asked.append((agent, prompt, schedule_id))
        if isinstance(schedules.reply, Exception):
            raise schedules.reply
        return schedules.reply

    evidence = EvidenceStore(tmp_path, 30, lambda run: None)
    admission = Admission(lambda: True, lambda: None)  # a free run slot for every occurrence
    schedules = ticker.Schedules("w", catalog, None, run_scheduled, evidence, admission)
    schedules.reply, schedules.asked, schedules.fake_cron = answer(), asked, cron
    return schedules


def recorded(schedules: ticker.Schedules) -> List[ScheduleRun]:
    return list(reversed(schedules.history.runs(AGENT, None, 100)))


def test_a_run_on_time_is_recorded_ok_with_its_finding(schedules):
    """A due job runs as a run of its agent; its finding, session and run id go to history and back to Hermes."""
    ok, document, response, error = schedules._execute(every_minute(datetime.now(timezone.utc)))
    assert schedules.asked == [(AGENT, "check r1", "j1")]
    assert (ok, response, error) == (True, "all interfaces up", None)
    assert "**Run:** run-1" in document
    [run] = recorded(schedules)
    assert (run.status, run.run_id, run.session_id, run.response, run.note) == (
        "ok",
        "run-1",
        "s-1",
        "all interfaces up",
        None,
    )


@pytest.mark.parametrize(
    "stop_reason, status", [("interrupted", "interrupted"), ("run_timeout", "timeout"), ("max_turns", "failed")]
)
def test_a_run_that_did_not_complete_is_not_ok(schedules, stop_reason, status):
    """A run that stopped early is recorded with its status and reported to Hermes as an error."""
    schedules.reply = answer(stop_reason=stop_reason)
    ok, _, response, error = schedules._execute(every_minute(datetime.now(timezone.utc)))
    assert ok is False
    assert response == ""
    assert error.startswith(f"{stop_reason}: ")
    assert recorded(schedules)[-1].status == status


def test_a_completed_run_without_a_response_is_a_failure(schedules):
    """A run that completed with an empty answer is recorded failed with a warning."""
    schedules.reply = answer(response="  ")
    assert schedules._execute(every_minute(datetime.now(timezone.utc)))[0] is False
    run = recorded(schedules)[-1]
    assert run.status == "failed"
    assert run.warnings == ["the agent completed without a response"]


def test_a_silent_answer_is_recorded_as_silent(schedules):
    """An agent answering [SILENT] is recorded ok and silent."""
    schedules.reply = answer(response="[SILENT]")
    schedules._execute(every_minute(datetime.now(timezone.utc)))
    assert recorded(schedules)[-1].silent is True


def test_a_long_finding_is_cut_and_marked(schedules):
    """A finding longer than RESPONSE_CHARS is kept cut and marked truncated; the session has it whole."""
    schedules.reply = answer(response="x" * (ticker.RESPONSE_CHARS + 1))
    schedules._execute(every_minute(datetime.now(timezone.utc)))
    run = recorded(schedules)[-1]
    assert len(run.response) == ticker.RESPONSE_CHARS
    assert run.truncated is True


@pytest.mark.parametrize("field", cron.HOST_FIELDS)
def test_a_job_that_would_run_code_on_the_host_is_refused_without_a_run(schedules, field):
    """A job setting script, workdir or no_agent is recorded failed and no run starts."""
    ok, document, _, error = schedules._execute(every_minute(datetime.now(timezone.utc), **{field: "x"}))
    assert schedules.asked == []
    assert ok is False
    assert "(REFUSED)" in document
    assert error == f"schedule sets {field}: hermes workers run agents only, never scripts on the worker host"
    assert recorded(schedules)[-1].status == "failed"


def test_an_agent_that_cannot_run_is_recorded_failed(schedules):
    """When the run cannot start (agent stopped, worker busy) the run is recorded failed with the reason."""
    schedules.reply = RuntimeError("agent 'interfaces' is stopped")
    ok, _, _, error = schedules._execute(every_minute(datetime.now(timezone.utc)))
    assert ok is False
    assert error == "agent 'interfaces' is stopped"
    assert recorded(schedules)[-1].warnings == ["agent 'interfaces' is stopped"]


def test_a_run_past_its_grace_records_the_slots_it_missed(schedules):
    """A run 5.5 minutes late on a 1-minute schedule records 5 missed slots once, and runs once now."""
    due = datetime.now(timezone.utc) - timedelta(seconds=330)
    schedules._execute(every_minute(due))
    missed, run = recorded(schedules)
    assert missed.status == "missed"
    assert missed.due == iso(due + timedelta(minutes=1))
    assert missed.note == (
        f"5 run(s) due from {iso(due + timedelta(minutes=1))} to {iso(due + timedelta(minutes=5))} "
        "were skipped while the worker was down or busy"
    )
    assert run.status == "ok"
    assert run.note.endswith("s late, past the grace period: ran once now")


def test_a_run_late_within_its_grace_is_a_catch_up(schedules):
    """A run 90 s late on a 1-minute schedule records its one missed slot and says it caught up."""
    due = datetime.now(timezone.utc) - timedelta(seconds=90)
    schedules._execute(every_minute(due))
    missed, run = recorded(schedules)
    assert missed.note.startswith("1 run(s) due from ")
    assert run.note.startswith("caught up ")


def test_a_run_a_few_seconds_late_is_on_time(schedules):
    """A run up to LATE seconds after its due time is not late: no missed record, no note."""
    schedules._execute(every_minute(datetime.now(timezone.utc) - timedelta(seconds=ticker.LATE / 2)))
    [run] = recorded(schedules)
    assert run.note is None


def test_a_one_off_job_never_records_missed_runs(schedules):
    """A one-off job run late has no slots to miss."""
    schedules._execute(every_minute(datetime.now(timezone.utc) - timedelta(hours=1), schedule={"kind": "once"}))
    [run] = recorded(schedules)
    assert run.status == "ok"
    assert run.note is None


def test_next_due_is_the_soonest_enabled_job(schedules, tmp_path):
    """The agent's next due time is its soonest enabled job's; paused and disabled jobs do not count."""
    soon, later = datetime(2026, 12, 1, 9, tzinfo=timezone.utc), datetime(2026, 12, 1, 10, tzinfo=timezone.utc)
    schedules.fake_cron.jobs = [
        {"id": "p", "next_run_at": iso(soon - timedelta(hours=1)), "state": "paused"},
        {"id": "d", "next_run_at": iso(soon - timedelta(hours=1)), "enabled": False},
        {"id": "b", "next_run_at": iso(later)},
        {"id": "a", "next_run_at": iso(soon)},
        {"id": "n", "next_run_at": None},
    ]
    jobs_file = tmp_path / "profiles" / AGENT / "cron" / "jobs.json"
    jobs_file.parent.mkdir(parents=True)
    jobs_file.write_text("[]")
    assert schedules.next_due(AGENT) == soon


def test_next_due_reads_the_store_only_when_its_file_changes(schedules, tmp_path):
    """The store is read again only when its jobs file changed; an agent without one has nothing due."""
    assert schedules.next_due(AGENT) is None
    jobs_file = tmp_path / "profiles" / AGENT / "cron" / "jobs.json"
    jobs_file.parent.mkdir(parents=True)
    jobs_file.write_text("[]")
    schedules.next_due(AGENT)
    schedules.next_due(AGENT)
    assert schedules.fake_cron.listed == 1
    stat = jobs_file.stat()
    os.utime(jobs_file, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    schedules.next_due(AGENT)
    assert schedules.fake_cron.listed == 2
