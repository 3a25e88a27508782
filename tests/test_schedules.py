"""
Scheduled checks end to end: native Hermes cron stores ticked by the worker,
due jobs run as real runs of the agent against FakeNOS devices, and the
history read back with no client attached while they ran.
"""

import json
import signal
import time

import pytest
from conftest import Lab, hermes_worker, network_jobs, norfab, run

from norfab_hermes.testing.embedded import kill_process_group, worker_process
from norfab_hermes.testing.scenario import Scenario
from norfab_hermes.testing.scripted_model import ScriptedModel, ScriptedModelServer

WORKER = "hermes-worker-1"
FB_SCHEMA = {"type": "object", "properties": {"FB": {"type": "string"}}, "required": ["FB"]}
CLI = {"service": "nornir", "task": "cli"}
TOOLS = {
    "inspect": {"input_schema": FB_SCHEMA, "norfab": {**CLI, "kwargs": {"commands": ["show clock"]}}},
    "bounce": {"input_schema": FB_SCHEMA, "approval": True, "norfab": {**CLI, "kwargs": {"commands": ["show users"]}}},
}
AGENTS = {
    "interfaces": {"instructions": "You check interfaces.", "toolsets": ["norfab"], "tools": TOOLS},
    "routing": {"instructions": "You check routing.", "toolsets": ["norfab"], "tools": TOOLS},
    "planner": {"instructions": "You plan checks.", "toolsets": ["norfab", "cronjob"], "tools": TOOLS},
}
EVERY_2S = "* * * * * */2"  # a sixth cron field counts seconds
RULES = [
    {
        "match": r"CHECK (?P<host>r\d)",
        "steps": [
            {"call": "inspect", "args": {"FB": "{{ host }}"}},
            {"say": "finding on {{ host }}: ok={{ ok('inspect') }}"},
        ],
    },
    {
        "match": r"BOUNCE (?P<host>r\d)",
        "steps": [
            {"call": "bounce", "args": {"FB": "{{ host }}"}},
            {"say": "bounce not done: {{ error('bounce') }}"},
        ],
    },
    {
        "match": r"WATCH (?P<host>r\d) FOR ME",
        "steps": [
            {
                "call": "cronjob",
                "args": {"action": "create", "name": "chat-watch", "prompt": "CHECK {{ host }}", "schedule": EVERY_2S},
            },
            {"say": "watching {{ host }}"},
        ],
    },
]


@pytest.fixture(scope="module")
def model():
    with ScriptedModelServer(ScriptedModel(Scenario(RULES))) as server:
        yield server


LAB = Lab(workers={WORKER: AGENTS}, hosts=("r1", "r2"))


def schedule(nf, agent="interfaces", **kwargs):
    res = run(nf.client, "schedule", agent=agent, **kwargs)
    assert not res["failed"], res["errors"]
    return res["result"]


def create(nf, name, prompt, when, agent="interfaces"):
    return schedule(nf, agent, action="create", definition={"name": name, "prompt": prompt, "schedule": when})[
        "schedules"
    ][0]


def history(nf, name, agent="interfaces", count=1, status=None, timeout=30):
    """The schedule's history once it holds ``count`` runs (of ``status``), newest first."""
    deadline = time.time() + timeout
    while True:
        runs = schedule(nf, agent, action="history", schedule_id=name, limit=100)["history"]
        matching = [r for r in runs if status is None or r["status"] == status]
        if len(matching) >= count or time.time() > deadline:
            return runs
        time.sleep(0.5)


def test_create_list_run_now_and_read_the_finding_with_its_tool_jobs(lab):
    nf, _ = lab
    created = create(nf, "r1-check", "CHECK r1", "every 1h")
    assert (created["state"], created["origin"], created["schedule"]) == ("scheduled", "norfab", "every 60m")
    listed = schedule(nf, action="list")["schedules"]
    assert [s["name"] for s in listed] == ["r1-check"]
    assert "runs now" in schedule(nf, action="run", schedule_id="r1-check")["message"]
    [finding] = history(nf, "r1-check")
    assert finding["status"] == "ok"
    assert finding["response"] == "finding on r1: ok=True"
    [call] = finding["tool_calls"]
    assert call["tool"] == "inspect"
    assert call["status"] == "completed"
    assert call["job_uuid"]
    session = run(nf.client, "get_session", agent="interfaces", session_id=finding["session_id"])["result"]
    assert any("finding on r1" in (m["content"] or "") for m in session["messages"])
    schedule(nf, action="remove", schedule_id="r1-check")


def test_an_every_schedule_fires_on_its_own_and_pause_stops_it(lab):
    nf, _ = lab
    create(nf, "ticker", "CHECK r2", EVERY_2S)
    assert len(history(nf, "ticker", count=2, status="ok")) >= 2, "the schedule did not fire twice on its own"
    schedule(nf, action="pause", schedule_id="ticker")
    time.sleep(1)  # a run already in flight may still land
    paused = len(history(nf, "ticker", count=0))
    time.sleep(5)
    assert len(history(nf, "ticker", count=0)) == paused, "a paused schedule fired"
    assert schedule(nf, action="list")["schedules"][0]["state"] == "paused"
    schedule(nf, action="resume", schedule_id="ticker")
    assert len(history(nf, "ticker", count=paused + 1, timeout=15)) > paused, "resume did not restart it"
    schedule(nf, action="remove", schedule_id="ticker")


def test_update_changes_the_prompt_used_next_and_remove_deletes(lab):
    nf, _ = lab
    create(nf, "moving", "CHECK r1", "every 1h")
    updated = schedule(nf, action="update", schedule_id="moving", definition={"prompt": "CHECK r2"})["schedules"][0]
    assert updated["prompt"] == "CHECK r2"
    schedule(nf, action="run", schedule_id="moving")
    assert history(nf, "moving")[0]["response"] == "finding on r2: ok=True"
    assert "removed" in schedule(nf, action="remove", schedule_id="moving")["message"]
    assert "moving" not in [s["name"] for s in schedule(nf, action="list")["schedules"]]
    res = run(nf.client, "schedule", agent="interfaces", action="history", schedule_id="moving")
    assert res["failed"]
    assert "schedule 'moving' not found for agent 'interfaces'" in res["errors"][0]


def test_a_schedule_whose_model_fails_is_recorded_as_failed(lab, model):
    nf, _ = lab
    create(nf, "broken-model", "FAIL 500", "every 1h")
    schedule(nf, action="run", schedule_id="broken-model")
    [failed] = history(nf, "broken-model")
    assert failed["status"] == "failed"
    assert failed["stop_reason"] == "provider_error"
    assert any("HTTP 500" in w for w in failed["warnings"])
    assert schedule(nf, action="list")["schedules"][0]["last_status"] not in (None, "ok")
    schedule(nf, action="remove", schedule_id="broken-model")


def test_two_agents_schedules_stay_apart(lab):
    nf, _ = lab
    create(nf, "same-name", "CHECK r1", "every 1h", agent="interfaces")
    create(nf, "same-name", "CHECK r2", "every 1h", agent="routing")
    schedule(nf, "routing", action="run", schedule_id="same-name")
    assert history(nf, "same-name", agent="routing")[0]["response"] == "finding on r2: ok=True"
    assert history(nf, "same-name", agent="interfaces", timeout=2) == []
    for agent in ("interfaces", "routing"):
        [only] = schedule(nf, agent, action="list")["schedules"]
        assert only["agent"] == agent
        schedule(nf, agent, action="remove", schedule_id="same-name")


def test_an_approval_gated_tool_is_refused_at_once_in_a_scheduled_run(lab):
    nf, base = lab
    create(nf, "bouncer", "BOUNCE r1", "every 1h")
    schedule(nf, action="run", schedule_id="bouncer")
    [ran] = history(nf, "bouncer")
    # nothing was parked for anyone to decide: the call was refused, not left waiting
    assert not run(nf.client, "get_approvals", agent="interfaces")["result"]
    [call] = ran["tool_calls"]
    assert call["status"] == "refused"
    assert "a scheduled run reaches a change only through the approval inbox with a named approver" in call["error"]
    assert call["job_uuid"] is None
    assert not [kwargs for _, kwargs in network_jobs(base) if kwargs.get("commands") == ["show users"]]
    schedule(nf, action="remove", schedule_id="bouncer")


def test_a_schedule_created_in_chat_fires_and_lands_in_history(lab):
    nf, _ = lab
    reply = run(nf.client, "invoke", job_timeout=60, agent="planner", instructions="WATCH r1 FOR ME")["result"]
    assert reply["response"] == "watching r1"
    [created] = schedule(nf, "planner", action="list")["schedules"]
    assert created["name"] == "chat-watch"
    assert created["origin"] == f"session {reply['session_id']}"
    assert history(nf, "chat-watch", agent="planner", count=1, status="ok")[0]["response"] == "finding on r1: ok=True"
    schedule(nf, "planner", action="remove", schedule_id="chat-watch")


@pytest.mark.parametrize(
    "kwargs, expected",
    [
        (
            {"action": "create", "definition": {"name": "x", "prompt": "p", "schedule": "every fortnight"}},
            "definition.schedule: Invalid duration",
        ),
        (
            {"action": "create", "definition": {"name": "x", "prompt": "p", "schedule": "2020-01-01T00:00"}},
            "is in the past",
        ),
        ({"action": "create", "definition": {"name": "x"}}, "definition: prompt, schedule required"),
        ({"action": "pause", "schedule_id": "nope"}, "schedule 'nope' not found for agent 'interfaces'"),
        ({"action": "pause"}, "schedule_id: 'pause' needs the schedule's id or name"),
        ({"action": "fly", "schedule_id": "x"}, "field 'action'"),
    ],
)
def test_bad_schedule_requests_name_the_field(lab, kwargs, expected):
    nf, _ = lab
    res = run(nf.client, "schedule", agent="interfaces", **kwargs)
    assert res["failed"], res["errors"]
    assert expected in res["errors"][0], res["errors"]
    assert "Traceback" not in res["errors"][0], res["errors"]


def test_unknown_agent(lab):
    nf, _ = lab
    res = run(nf.client, "schedule", agent="nosuch", action="list")
    assert res["failed"]
    assert "agent 'nosuch' not found" in res["errors"][0]


def test_get_status_reports_the_scheduler(lab):
    nf, _ = lab
    create(nf, "status-check", "CHECK r1", "every 1h")
    status = run(nf.client, "get_status", agent="interfaces")["result"]
    scheduler = status["scheduler"]
    assert scheduler["ticking"] is True
    assert scheduler["last_tick"]
    assert list(scheduler["agents"]) == ["interfaces"]
    assert scheduler["agents"]["interfaces"]["schedules"] == 1
    assert scheduler["agents"]["interfaces"]["next_due"]
    assert scheduler["agents"]["interfaces"]["overdue"] == []
    schedule(nf, action="remove", schedule_id="status-check")


def test_schedules_and_history_survive_a_restart_and_missed_runs_are_reported(model, tmp_path):
    inventory = hermes_worker(model.base_url, {"interfaces": {"instructions": "You check.", "hermes": {}}})
    with norfab(tmp_path, {WORKER: inventory}, separate=(WORKER,)) as nf:
        with worker_process(nf, WORKER):
            create(nf, "steady", "hello", "every 1h")
            schedule(nf, action="pause", schedule_id="steady")
            create(nf, "fast", "ping", "* * * * * */3")
            assert len(history(nf, "fast", count=1, status="ok")) >= 1
        with worker_process(nf, WORKER):  # graceful stop and start: NorFab stops the worker process
            listed = {s["name"]: s for s in schedule(nf, action="list")["schedules"]}
            assert listed["steady"]["state"] == "paused"
            assert listed["fast"]["state"] == "scheduled"
            before = history(nf, "fast", count=0)
            assert before, "history was lost over a restart"
        with worker_process(nf, WORKER) as process:
            kill_process_group(process, signal.SIGKILL)
        time.sleep(10)  # down while 'fast' falls due three times
        with worker_process(nf, WORKER):
            deadline = time.time() + 30
            while time.time() < deadline:
                runs = history(nf, "fast", count=0)
                caught_up = [r for r in runs if r["status"] == "ok" and "late" in (r["note"] or "")]
                if caught_up:
                    break
                time.sleep(0.5)
            assert caught_up, json.dumps(runs[:3])
            missed = [r for r in runs if r["status"] == "missed"]
            assert missed, json.dumps(runs[:3])
            assert "were skipped while the worker was down" in missed[0]["note"], json.dumps(runs[:3])
            assert len(runs) > len(before) + 1
