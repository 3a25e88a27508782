"""The nf# hermes schedule commands, driven through NorFab's real nfcli root shell against two hermes workers."""

import io
import os
import pty
import re
import sys
import time
from contextlib import redirect_stdout

import pytest
import test_shell
from conftest import last_job
from rich.console import Console
from test_shell import LAB2, fits, nfcli, terminal_width

from norfab_hermes.nfcli_shell import HermesPauseCommand

LAB, app = test_shell.LAB, test_shell.app  # as in test_shell: a NorFab with two hermes workers, nfcli's shell
ID = re.compile(r"\b[0-9a-f]{12}\b")


def flat(output):
    return " ".join(output.split())


def wait_for_run(app, line, status="ok", timeout=60):
    """Poll a history command until a run with ``status`` shows."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        out = nfcli(app, line)
        if re.search(rf"│\s+{status}\s+│", out):
            return out
        time.sleep(0.5)
    raise AssertionError(f"no '{status}' run in: {out}")


def test_create_list_pause_resume_run_history_update_remove(nf, app):
    out = nfcli(app, 'hermes schedule bgp add "every 5m" "Check r1 interfaces" name r1-watch repeat 3')
    sent = last_job(nf.client, "schedule")
    assert sent["workers_requested"] == [LAB2]  # the agent's one worker, found like invoke finds it
    assert sent["kwargs"] == {
        "agent": "bgp",
        "action": "create",
        "definition": {"schedule": "every 5m", "prompt": "Check r1 interfaces", "name": "r1-watch", "repeat": 3},
    }
    assert "schedule 'r1-watch' created, next run" in out
    schedule_id = ID.search(out).group(0)
    assert f"run it now: hermes schedule bgp run {schedule_id} workers {LAB2}" in flat(out)

    out = nfcli(app, "hermes schedules bgp")
    assert re.search(rf"{schedule_id}\s+│\s+r1-watch\s+│\s+every 5m\s+│\s+scheduled\s+│.*│\s+0/3\s+│\s+norfab", out), (
        out
    )
    assert f"schedules of agent 'bgp' on worker '{LAB2}'" in out

    out = nfcli(app, f"hermes status workers {LAB2}")  # the scheduler table
    assert re.search(rf"{LAB2}\s+│\s+yes\s+│\s+\S+\s+│\s+bgp\s+│\s+1\s+│\s+0\s+│\s+[\w ]*\d\d:\d\d", out), out

    out = nfcli(app, "hermes pause bgp schedule r1-watch")
    assert "schedule 'r1-watch' paused" in out
    assert re.search(r"r1-watch\s+│\s+every 5m\s+│\s+paused", out)
    assert f"resume it: hermes resume bgp schedule {schedule_id} workers {LAB2}" in flat(out)
    assert "is paused; resume it to run it" in flat(nfcli(app, "hermes schedule bgp run r1-watch"))
    out = nfcli(app, f"hermes resume bgp schedule {schedule_id}")
    assert "schedule 'r1-watch' resumed, next run" in out
    assert re.search(r"every 5m\s+│\s+scheduled", out)

    out = nfcli(app, "hermes schedule bgp run r1-watch")
    assert "schedule 'r1-watch' runs now" in out
    out = wait_for_run(app, "hermes history bgp schedule r1-watch")
    assert f"runs of schedule 'r1-watch' ({schedule_id}, scheduled" in flat(out)
    row = re.search(r"│\s+ok\s+│.*│\s+([\d.]+)s\s+│\s+(.*?)\s+│\s+(\w+)\s+│", out)
    assert row, out
    assert "ECHO: Check r1 interfaces" in row.group(2), out
    session_id = row.group(3)
    assert f"read a whole finding: hermes session bgp SESSION workers {LAB2}" in flat(out)
    assert last_job(nf.client, "schedule")["kwargs"] == {"agent": "bgp", "action": "history", "schedule_id": "r1-watch"}
    assert "ECHO: Check r1 interfaces" in nfcli(app, f"hermes session bgp {session_id} workers {LAB2}")
    nfcli(app, "hermes history bgp schedule r1-watch limit 1")
    assert last_job(nf.client, "schedule")["kwargs"]["limit"] == 1
    assert re.search(r"r1-watch\s+│.*│\s+ok\s+│\s+1/3\s+│", nfcli(app, "hermes schedules bgp"))

    out = nfcli(app, 'hermes schedule bgp update r1-watch every "10m" prompt "Check r2 interfaces"')
    assert last_job(nf.client, "schedule")["kwargs"]["definition"] == {
        "schedule": "every 10m",
        "prompt": "Check r2 interfaces",
    }
    assert "schedule 'r1-watch' updated: prompt, schedule" in out
    assert re.search(r"r1-watch\s+│\s+every 10m", out)
    nfcli(app, "hermes schedule bgp update r1-watch every '*/5 * * * *' name r2-watch repeat 5")
    assert last_job(nf.client, "schedule")["kwargs"]["definition"] == {
        "schedule": "*/5 * * * *",
        "name": "r2-watch",
        "repeat": 5,
    }

    out = nfcli(app, "hermes schedule bgp remove r2-watch")  # not a terminal: no question
    assert "schedule 'r2-watch' removed with its history" in out
    assert "schedules of agent 'bgp' on worker 'hermes-lab-2': none" in flat(nfcli(app, "hermes schedules bgp"))


def test_remove_asks_first_on_a_terminal(nf, app, monkeypatch):
    out = nfcli(app, 'hermes schedule routing add "every 1h" "Check routes" name hourly')
    schedule_id = ID.search(out).group(0)
    master, slave = pty.openpty()
    with os.fdopen(slave, "r") as terminal:
        monkeypatch.setattr(sys, "stdin", terminal)
        prompts = []
        out = nfcli(app, "hermes schedule routing remove hourly", ["n"], prompts)
        assert prompts == [
            f"remove schedule 'hourly' ({schedule_id}, 0 runs) of agent 'routing' on worker 'hermes-lab-1' "
            "with its history? [y/N] "
        ]
        assert "nothing removed" in out
        assert last_job(nf.client, "schedule")["kwargs"]["action"] == "history"  # a lookup only, nothing removed
        out = nfcli(app, "hermes schedule routing remove hourly", ["yes"])
        assert "schedule 'hourly' removed with its history" in out
        assert last_job(nf.client, "schedule")["kwargs"] == {
            "agent": "routing",
            "action": "remove",
            "schedule_id": schedule_id,
        }
        out = nfcli(app, "hermes schedule routing remove hourly", ["y"])  # gone: no question, the worker's answer
        assert "schedule 'hourly' not found for agent 'routing'" in flat(out)
    os.close(master)


@pytest.mark.parametrize(
    "line, error",
    [
        (
            "hermes pause bgp schedule nope",
            "schedule 'nope' not found for agent 'bgp' on worker 'hermes-lab-2'",
        ),
        ("hermes history bgp schedule 000123", "schedule '000123' not found"),  # an id of digits stays as typed
        ("hermes schedule bgp run 0012", "schedule '0012' not found"),
        (
            "hermes schedules interfaces",
            "agent 'interfaces' is served by several hermes workers: hermes-lab-1, hermes-lab-2; choose one with workers",
        ),
        ("hermes schedules ospf", "agent 'ospf' not found; known agents:"),
        (
            'hermes schedule bgp add "every 5m" "Check r1"',
            "add takes the schedule and the prompt, each quoted, and a name",
        ),
        ('hermes schedule bgp add every 5m "Check r1" name x', "add takes the schedule and the prompt, each quoted"),
        ('hermes schedule bgp add "every 5 fortnights" "Check" name x', "definition.schedule:"),
        ("hermes schedule bgp update r1-watch", "update takes what to change: name, prompt, every, repeat"),
        ("hermes schedule bgp run r1-watch name x", "run takes no name; those are for add and update"),
        (
            "hermes schedule bgp frobnicate r1-watch",
            "hermes schedule takes an agent and one of add, update, run, remove",
        ),
        ("hermes history bgp", "history takes the schedule: hermes history AGENT schedule ID"),
        ('hermes schedule bgp add "every 5m" Check status', "'schedule' takes quoted text"),  # not 'hermes status'
    ],
)
def test_schedule_errors_are_clear_red_text(app, line, error):
    out = nfcli(app, line)
    assert error in flat(out)
    assert "Traceback" not in out


def test_unknown_schedule_is_red(app):
    """Errors print in red, as every hermes error does."""
    rendered = HermesPauseCommand.run(agent="bgp", schedule_id="nope")
    console = Console(file=io.StringIO(), force_terminal=True, width=200)
    console.print(rendered)
    assert "\x1b[31m" in console.file.getvalue()
    assert "schedule 'nope' not found" in console.file.getvalue()


def test_schedule_commands_in_the_hermes_subshell(app):
    """Inside nf[hermes]# the values are validated against the hermes model: ids stay as typed there too."""
    out = io.StringIO()
    with redirect_stdout(out):
        app.onecmd("hermes")
        try:
            app.onecmd("schedule bgp run 000123")
            app.onecmd("schedules bgp")
        finally:
            app.onecmd("top")
    assert "schedule '000123' not found" in flat(out.getvalue())
    assert "schedules of agent 'bgp' on worker 'hermes-lab-2'" in flat(out.getvalue())
    assert app.prompt == "nf#"


def test_schedules_history_and_status_fit_80_columns_and_history_works_in_the_subshell(nf, app):
    out = nfcli(app, 'hermes schedule bgp add "every 1h" "Check r1 interfaces" name narrow-check')
    schedule_id = ID.search(out).group(0)
    nfcli(app, "hermes schedule bgp run narrow-check")
    wait_for_run(app, "hermes history bgp schedule narrow-check")
    with terminal_width(80):
        listed = fits(nfcli(app, "hermes schedules bgp"))
        history = fits(nfcli(app, "hermes history bgp schedule narrow-check"))
        fits(nfcli(app, f"hermes status workers {LAB2}"))
    assert re.search(rf"│ {schedule_id} │ narrow-check │ every 60m │ scheduled │ [\w ]*\d\d:\d\d", listed), listed
    session = re.search(r"│ ok\s+│.*│ (\d{8}_\d{6}_[0-9a-f]+) │", history)
    assert session, history  # the session id whole, to read the finding with
    out = io.StringIO()
    with redirect_stdout(out):  # as from nf#: inside nf[hermes]#, history AGENT schedule ID is the schedule's history
        app.onecmd("hermes")
        try:
            app.onecmd("history bgp schedule narrow-check")
            assert last_job(nf.client, "schedule")["kwargs"] == {
                "agent": "bgp",
                "action": "history",
                "schedule_id": "narrow-check",
            }
            sent = len(nf.client.job_db.fetch_jobs(service="hermes", task="schedule", last=1000))
            app.onecmd("history")  # bare: PICLE's command history, no job
            assert len(nf.client.job_db.fetch_jobs(service="hermes", task="schedule", last=1000)) == sent
        finally:
            app.onecmd("top")
    assert f"runs of schedule 'narrow-check' ({schedule_id}, scheduled" in flat(out.getvalue())
    assert flat(out.getvalue()).count("runs of schedule 'narrow-check'") == 1
    assert session.group(1) in out.getvalue()
    nfcli(app, f"hermes schedule bgp remove {schedule_id}")
