"""
The nf# hermes commands for background runs and the approval inbox, driven through NorFab's real nfcli root
shell against two hermes workers: hermes-lab-1 (alpha, and fixer whose bounce tool needs an approval and parks
in the inbox for up to 30 s) and hermes-lab-2 (alpha), with a nornir worker over a FakeNOS r1.
"""

import io
import os
import re
import signal
import threading
import time
from contextlib import redirect_stdout

import pytest
import test_shell
from conftest import Lab, last_job, network_jobs, run
from rich.console import Console
from test_shell import LAB1, LAB2, fits, ids, nfcli, terminal_width

from norfab_hermes.nfcli.runs import FOLLOW_POLL, HermesApproveCommand

app = test_shell.app  # nfcli's shell with the hermes plugin mounted, over this module's nf
FB_SCHEMA = {"type": "object", "properties": {"FB": {"type": "string"}}, "required": ["FB"]}
BOUNCE = {
    "input_schema": FB_SCHEMA,
    "approval": True,
    "norfab": {"service": "nornir", "task": "cli", "kwargs": {"commands": ["show users"]}},
}
ALPHA = {"instructions": "You are ALPHA."}
FIXER = {"instructions": "You fix.", "toolsets": ["norfab"], "tools": {"bounce": BOUNCE}, "approval_timeout": 30}
BOUNCE_R1 = """'CALL bounce {"FB": "r1"}'"""  # the scripted model calls the tool; single quotes keep the JSON's


LAB = Lab(workers={LAB1: {"alpha": ALPHA, "fixer": FIXER}, LAB2: {"alpha": ALPHA}}, hosts=("r1",))


def flat(output):
    return " ".join(output.split())


def red(rendered):
    console = Console(file=io.StringIO(), force_terminal=True, width=200)
    console.print(rendered)
    return console.file.getvalue()


def shows_users(base):
    return [kwargs for _, kwargs in network_jobs(base) if kwargs.get("commands") == ["show users"]]


def wait_for(app, line, text, timeout=30):
    """Run an nf# command until its output holds ``text``."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        out = nfcli(app, line)
        if text in flat(out):
            return out
        time.sleep(0.3)
    raise AssertionError(f"'{text}' never showed in: {out}")


def background(app, agent, instructions, worker=None):
    out = nfcli(app, f"hermes invoke {agent} {instructions} background" + (f" workers {worker}" if worker else ""))
    return ids(out)["run"], out


def test_invoke_background_answers_at_once_and_run_follows_it(nf, app):
    out = nfcli(app, f'hermes invoke alpha "SLEEP 3" background workers {LAB2} timeout 60')
    sent = last_job(nf.client, "start_run")
    assert sent["workers_requested"] == [LAB2]
    assert sent["kwargs"] == {"agent": "alpha", "instructions": "SLEEP 3", "session_id": None, "run_timeout": 60}
    run_id, session_id = ids(out)["run"], ids(out)["session"]
    assert f"run {run_id} started in the background: agent 'alpha' on worker '{LAB2}', session {session_id}" in flat(
        out
    )
    assert f"follow it: hermes run alpha {run_id} workers {LAB2} follow" in flat(out)

    out = nfcli(app, f"hermes run alpha {run_id}")  # alpha is on both workers: the one that ran it answers
    assert re.search(
        rf"run {run_id} \| agent alpha \| worker {LAB2} \| (queued|running) \| session {session_id}", flat(out)
    ), out
    assert f"run {run_id} started on agent 'alpha'" in out
    assert "SLEPT" not in out
    assert f"follow it: hermes run alpha {run_id} workers {LAB2} follow" in flat(out)
    sent = last_job(nf.client, "get_run")
    assert sent["workers_requested"] == [LAB1, LAB2]
    assert sent["kwargs"] == {"agent": "alpha", "run_id": run_id, "offset": 0}

    out = nfcli(app, f"hermes run alpha {run_id} follow")
    assert out.index(f"run {run_id} started on agent 'alpha'") < out.index("completed") < out.index("SLEPT 3")
    assert f"completed | run {run_id} | session {session_id} | worker {LAB2} | agent alpha" in flat(out)
    assert f'continue with: hermes invoke alpha "..." session {session_id} workers {LAB2}' in flat(out)
    assert last_job(nf.client, "get_run")["kwargs"]["offset"] > 0  # polled from next_offset

    out = nfcli(app, f"hermes run alpha {run_id} workers {LAB2}")  # finished: the whole record and the reply
    assert f"run {run_id} | agent alpha | worker {LAB2} | finished: completed" in flat(out)
    assert f"run {run_id} started on agent 'alpha'" in out
    assert "SLEPT 3" in out
    assert last_job(nf.client, "get_run")["workers_requested"] == [LAB2]


def test_background_continues_a_session(nf, app):
    first = ids(nfcli(app, f'hermes invoke alpha "first" background workers {LAB1}'))
    wait_for(app, f"hermes run alpha {first['run']}", "ECHO: first")
    out = nfcli(app, f'hermes invoke alpha "second" session {first["session"]} background')
    assert last_job(nf.client, "start_run")["kwargs"]["session_id"] == first["session"]
    assert f"on worker '{LAB1}', session {first['session']}" in flat(out)  # the session's own worker
    assert "ECHO: second" in nfcli(app, f"hermes run alpha {ids(out)['run']} follow")


def test_approve_a_parked_call_from_the_inbox(lab, app):
    nf, base = lab
    assert "approvals waiting for an operator: none" in flat(nfcli(app, "hermes approvals"))
    run_id, out = background(app, "fixer", BOUNCE_R1)
    assert last_job(nf.client, "start_run")["kwargs"]["instructions"] == 'CALL bounce {"FB": "r1"}'
    out = wait_for(app, f"hermes run fixer {run_id}", "waiting_for_approval")
    approval_id = re.search(r"waiting for approval ([0-9a-f]{12}): bounce \(nornir\.cli on any\)", flat(out)).group(
        1
    )  # an event
    assert re.search(rf"{approval_id}\s+│\s+bounce\s+│\s+nornir\.cli on any\s+│.*│\s+pending\s+│", out), out
    assert f'decide it: hermes approve {approval_id} (note "WHY") or hermes deny {approval_id}' in flat(out)

    out = nfcli(app, "hermes approvals")
    sent = last_job(nf.client, "get_approvals")
    assert sent["workers_requested"] == [LAB1, LAB2]
    assert sent["kwargs"] == {}
    row = re.search(
        rf"{LAB1}\s+│\s+{approval_id}\s+│\s+fixer\s+│\s+{run_id}\s+│\s+bounce\s+│\s+nornir\.cli on any\s+│\s+"
        r'\{"FB": "r1"\}\s+│\s+in \d+s',
        out,
    )
    assert row, out
    assert not shows_users(base), "the call ran before anyone approved it"

    out = nfcli(app, f'hermes approve {approval_id} note "change window CHG-42"')
    sent = last_job(nf.client, "approve")
    assert sent["workers_requested"] == [LAB1, LAB2]  # only the run's worker knows the id
    assert sent["kwargs"] == {"approval_id": approval_id, "note": "change window CHG-42"}
    assert f"approval {approval_id} of run {run_id} (agent 'fixer', worker '{LAB1}'): approved by" in flat(out)
    assert 'bounce (nornir.cli on any) with {"FB": "r1"}; note: change window CHG-42' in flat(out)
    assert f"follow the run: hermes run fixer {run_id} workers {LAB1} follow" in flat(out)

    out = nfcli(app, f"hermes run fixer {run_id} follow")
    assert re.search(r"tool bounce nornir\.cli completed in [\d.]+s job \w+", out), out
    out = nfcli(app, f"hermes run fixer {run_id}")
    assert re.search(rf"{approval_id}\s+│\s+bounce\s+│.*│\s+approved\s+│\s+\S+\s+│\s+change window CHG-42", out), out
    assert len(shows_users(base)) == 1

    out = nfcli(app, f"hermes approve {approval_id}")  # decided already: its worker says so
    assert f"approval '{approval_id}' is already approved" in flat(out)
    assert "approvals waiting for an operator: none" in flat(nfcli(app, "hermes approvals"))


def test_deny_a_parked_call(lab, app):
    nf, base = lab
    before = len(shows_users(base))
    run_id, _ = background(app, "fixer", BOUNCE_R1)
    out = wait_for(app, "hermes approvals workers hermes-lab-*", run_id)
    approval_id = re.search(rf"([0-9a-f]{{12}})\s+│\s+fixer\s+│\s+{run_id}\s+│\s+bounce\s+│", out).group(1)
    with terminal_width(80):  # the inbox keeps what deciding needs: the approval id, whole
        inbox, state = fits(nfcli(app, "hermes approvals")), fits(nfcli(app, f"hermes run fixer {run_id}"))
    assert re.search(rf'│ {approval_id} │ fixer │ {run_id} │ bounce │ {{"FB": "r1"}}\s+│ in \d+s', inbox), inbox
    assert re.search(rf"│ {approval_id} │ bounce │ .* │ pending │", state), state
    out = nfcli(app, f'hermes deny {approval_id} note "not tonight" workers {LAB1}')
    assert last_job(nf.client, "deny")["workers_requested"] == [LAB1]
    assert f"approval {approval_id} of run {run_id} (agent 'fixer', worker '{LAB1}'): denied by" in flat(out)
    out = nfcli(app, f"hermes run fixer {run_id} follow")
    assert "tool bounce nornir.cli refused" in out
    assert "denied this call (not tonight)" in flat(out)
    assert len(shows_users(base)) == before


def test_follow_shows_the_approval_and_waits_for_the_decision(lab, app):
    """A follower sees the call park and how to decide it; another client approves it, the follow goes on."""
    nf, base = lab
    run_id, _ = background(app, "fixer", f"{BOUNCE_R1[:-1]} #followed'")
    decided = {}

    def approve_from_another_client():
        other = nf.make_client(name="approver-client")
        try:
            deadline = time.time() + 30
            while time.time() < deadline and not decided:
                for approval in run(other, "get_approvals", worker=LAB1)["result"]:
                    if approval["run_id"] == run_id:
                        time.sleep(3 * FOLLOW_POLL)  # the follower polls meanwhile and sees it waiting
                        decided.update(
                            run(other, "approve", worker=LAB1, approval_id=approval["approval_id"])["result"]
                        )
                time.sleep(0.5)
        finally:
            other.destroy()

    approver = threading.Thread(target=approve_from_another_client, daemon=True)
    approver.start()
    out = nfcli(app, f"hermes run fixer {run_id} follow")
    approver.join(10)
    approval_id = decided["approval_id"]
    assert f"approval {approval_id} waits for an operator until" in flat(out)
    assert f'decide it: hermes approve {approval_id} (note "WHY") or hermes deny {approval_id}' in flat(out)
    assert f"approval {approval_id} approved" in out  # the run's event
    assert re.search(r"tool bounce nornir\.cli completed", out)
    assert "approver-client" in decided["decided_by"]


def test_ctrl_c_stops_following_not_the_run(nf, app):
    run_id, _ = background(app, "alpha", '"SLEEP 4"', LAB1)
    handler = signal.getsignal(signal.SIGINT)
    threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT)).start()  # a real Ctrl+C
    out = nfcli(app, f"hermes run alpha {run_id} follow")
    assert (
        f"stopped following; run {run_id} goes on on worker '{LAB1}': hermes run alpha {run_id} workers {LAB1} (follow)"
        in flat(out)
    )
    assert signal.getsignal(signal.SIGINT) == handler
    assert not nf.exiting
    assert "SLEPT 4" in nfcli(app, f"hermes run alpha {run_id} follow")  # the run went on


@pytest.mark.parametrize(
    "line, error",
    [
        (
            "hermes approve 000000000000",
            "approval '000000000000' is not known on any hermes worker (asked hermes-lab-1, hermes-lab-2)",
        ),
        (
            f"hermes deny 0012e4 workers {LAB2}",
            "approval '0012e4' is not known on any hermes worker (asked hermes-lab-2)",
        ),
        ("hermes deny abc note", 'note takes the reason, quoted: hermes deny ID note "WHY"'),
        ("hermes approvals workers hermes-core-*", "no alive hermes worker matches 'hermes-core-*'"),
        (
            "hermes run alpha 00badc0ffee0",
            "run '00badc0ffee0' of agent 'alpha' is not known on any hermes worker serving the agent (asked hermes-lab-1, hermes-lab-2)",
        ),
        ("hermes run fixer 0123", "run '0123' is not known on worker 'hermes-lab-1'"),  # one worker: its own answer
        ("hermes run alpha", "run takes the agent and the run id: hermes run AGENT RUN_ID"),
        ('hermes invoke alpha "hi" background', "agent 'alpha' is served by several hermes workers"),
        (f'hermes invoke alpha "/usage" background workers {LAB1}', "looks like a slash command"),
        ("hermes chat alpha background", "background is an option of invoke, follow one of run"),
        ("hermes invoke alpha run the check", "'invoke' takes quoted text"),  # not 'hermes run'
    ],
)
def test_errors_are_clear(app, line, error):
    out = nfcli(app, line)
    assert error in flat(out)
    assert "Traceback" not in out


def test_an_unknown_approval_is_one_red_line(app):
    rendered = red(HermesApproveCommand.run(approval_id="000000000000"))
    assert "\x1b[31m" in rendered
    assert "approval '000000000000' is not known on any hermes worker" in rendered
    assert len(rendered.strip().splitlines()) == 1


def test_run_and_approvals_in_the_hermes_subshell(app):
    """Inside nf[hermes]# the values are validated against the hermes model: ids stay as typed there too."""
    out = io.StringIO()
    with redirect_stdout(out):
        app.onecmd("hermes")
        try:
            app.onecmd("run fixer 000123")
            app.onecmd("approve 000123 note 'no such'")
            app.onecmd("approvals")
        finally:
            app.onecmd("top")
    text = flat(out.getvalue())
    assert "run '000123' is not known on worker 'hermes-lab-1'" in text
    assert "approval '000123' is not known on any hermes worker" in text
    assert "approvals waiting for an operator" in text
    assert app.prompt == "nf#"
