"""The nf# hermes commands, driven through NorFab's real nfcli root shell against two hermes workers."""

import contextlib
import io
import os
import pty
import re
import signal
import sys
import termios
import threading
import time
from unittest import mock

import pytest
from conftest import TWO_WORKERS, hermes_shell, last_job, result_of, run, start_invoke
from picle import picle as picle_module
from prompt_toolkit import PromptSession
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput

from norfab_hermes.nfcli.live import CtrlC

LAB1, LAB2 = "hermes-lab-1", "hermes-lab-2"
ISO_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d")


LAB = TWO_WORKERS


@pytest.fixture(scope="module")
def app(nf):
    with hermes_shell(nf) as shell:
        yield shell


def nfcli(app, line, inputs=None, prompts=None):
    """Run one nf# command; ``inputs`` answer its prompts (an exception class is raised instead)."""

    def read(prompt, inline_help=True):
        if prompts is not None:
            prompts.append(prompt() if callable(prompt) else prompt)
        item = inputs.pop(0)
        if isinstance(item, type) and issubclass(item, BaseException):
            raise item
        return item

    out = io.StringIO()
    reader = mock.patch.object(app, "_read_interactive_input", side_effect=read) if inputs else contextlib.nullcontext()
    with contextlib.redirect_stdout(out), reader:
        assert app.onecmd(line) is None  # nothing a hermes command does may end nfcli
    assert app.shells == [app.shell], "the shell stack changed"
    assert app.prompt == "nf#", "the shell stack changed"
    return out.getvalue()


def ids(output):
    return dict(re.findall(r"\b(run|session) ([0-9a-f_]{12,})", output))


@contextlib.contextmanager
def terminal_width(columns):
    """Commands print as in a terminal this wide: PICLE's console and the shell's own (COLUMNS)."""
    console, width = picle_module.RICHCONSOLE, picle_module.RICHCONSOLE.width
    console.width = columns
    try:
        with mock.patch.dict(os.environ, {"COLUMNS": str(columns)}):
            yield
    finally:
        console.width = width


def fits(output, columns=80):
    """Every line fits the terminal, and no time is printed as a full ISO timestamp."""
    widest = max(output.splitlines(), key=len)
    assert len(widest) <= columns, f"{len(widest)} columns: {widest}"
    assert not ISO_TIME.search(output), output
    return output


def test_agents_and_status_fan_out_to_the_selected_workers(nf, app):
    out = nfcli(app, "hermes agents")
    for row in ((LAB1, "interfaces"), (LAB1, "routing"), (LAB2, "bgp"), (LAB2, "interfaces")):
        assert re.search(rf"{row[0]}\s+│\s+{row[1]}\s+│\s+yes", out), out
    out = nfcli(app, "hermes agents workers hermes-lab-2")
    assert "bgp" in out
    assert "routing" not in out
    assert last_job(nf.client, "get_agents")["workers_requested"] == [LAB2]
    out = nfcli(app, "hermes status workers hermes-lab-*")
    assert re.search(rf"{LAB1}\s+│\s+yes\s+│\s+interfaces, routing\s+│\s+0/16", out), out
    assert re.search(rf"{LAB2}\s+│\s+yes\s+│\s+bgp, interfaces", out), out
    assert last_job(nf.client, "get_status")["workers_requested"] == [LAB1, LAB2]


def test_invoke_runs_on_the_agents_worker_and_shows_ids_to_continue(nf, app):
    out = nfcli(app, 'hermes invoke bgp "Check [r1] down"')
    sent = last_job(nf.client, "invoke")
    assert sent["workers_requested"] == LAB2
    assert sent["kwargs"] == {
        "agent": "bgp",
        "instructions": "Check [r1] down",
        "session_id": None,
        "interactive": True,
    }
    assert "ECHO: Check [r1] down" in out  # Rich markup in replies is not eaten
    assert f"run {ids(out)['run']} started on agent 'bgp'" in out  # live events
    session_id = ids(out)["session"]
    assert f'continue with: hermes invoke bgp "..." session {session_id} workers {LAB2}' in out

    out = nfcli(app, f'hermes invoke bgp "and now?" session {session_id}')
    assert last_job(nf.client, "invoke")["kwargs"]["session_id"] == session_id
    assert "ECHO: and now?" in out
    assert f"session {session_id} | worker {LAB2}" in out


def test_invoke_and_chat_show_the_reply_once_as_it_is_written(nf, app):
    out = nfcli(app, 'hermes invoke bgp "STREAM 30 0.05"')
    words = " ".join(f"word{i}" for i in range(30))
    lines = out.splitlines()
    streamed = lines.index(words)  # the words as they came, on one line, before the run's end ...
    ended = next(i for i, line in enumerate(lines) if re.search(r"INFO +run \w+ completed", line))
    assert streamed < ended, out
    assert out.count("word29") == 1, out  # ... and not again after it
    assert re.search(r"completed \| run \w+ \| session", lines[-2]), out  # the run's ids still follow
    assert not re.search(r"INFO +reply$", out, re.M)  # reply updates are not event lines
    out = nfcli(app, "hermes chat bgp", ["STREAM 10 0.05", "/exit"])
    assert out.count("word9") == 1, out


def test_a_question_mark_typed_in_quoted_instructions_is_sent(nf, app):
    """Typed at nfcli's real prompt: '?' inside quotes is text, not PICLE's help key."""
    with create_pipe_input() as keys:
        app._prompt_session = PromptSession(input=keys, output=DummyOutput(), key_bindings=app._prompt_key_bindings)
        keys.send_text('hermes invoke routing "Why does traffic go through r2?"\r')
        try:
            line = app._read_interactive_input(app.prompt)
        finally:
            app._prompt_session = None
    out = nfcli(app, line)
    assert last_job(nf.client, "invoke")["kwargs"]["instructions"] == "Why does traffic go through r2?"
    assert "ECHO: Why does traffic go through r2?" in out


def test_tables_and_runs_fit_80_columns_with_names_whole(nf, app):
    with terminal_width(80):
        out = fits(nfcli(app, 'hermes invoke routing "Check [r1] for the 80 column table"'))
        session, run_id = ids(out)["session"], ids(out)["run"]
        assert re.search(rf"^\d\d:\d\d:\d\d\.\d+ INFO +run {run_id} started on agent 'routing'$", out, re.M), out
        agents, status = fits(nfcli(app, "hermes agents")), fits(nfcli(app, "hermes status"))
        sessions = fits(nfcli(app, "hermes sessions routing"))
        fits(nfcli(app, f"hermes session routing {session}"))
    for worker, agent in ((LAB1, "interfaces"), (LAB1, "routing"), (LAB2, "bgp"), (LAB2, "interfaces")):
        assert re.search(rf"│ {worker}\s+│ {agent}\s+│ yes\s+│", agents), agents
    assert re.search(rf"│ {LAB1}\s+│ yes\s+│ interfaces, routing\s+│ 0/16\s+│", status), status
    assert re.search(rf"│ {session} │", sessions), sessions
    assert re.search(r"│ \d\d:\d\d:\d\d|\w{3} \d\d \d\d:\d\d", sessions), sessions  # last active, local and short


def test_invoke_of_a_shared_agent_name_goes_to_the_named_worker(nf, app):
    out = nfcli(app, 'hermes invoke interfaces "show ip int brief" workers hermes-lab-1')
    assert last_job(nf.client, "invoke")["workers_requested"] == LAB1
    assert "ECHO: show ip int brief" in out
    assert f"worker {LAB1} | agent interfaces" in out


@pytest.mark.parametrize(
    "line, error",
    [
        (
            'hermes invoke interfaces "hi"',
            "agent 'interfaces' is served by several hermes workers: hermes-lab-1, hermes-lab-2; "
            "choose one with workers, e.g. workers hermes-lab-1",
        ),
        (
            'hermes invoke ospf "hi"',
            "agent 'ospf' not found; known agents: hermes-lab-1: interfaces, routing; hermes-lab-2: bgp, interfaces",
        ),
        (
            "hermes agents workers hermes-core-*",
            "no alive hermes worker matches 'hermes-core-*'; alive hermes workers: hermes-lab-1, hermes-lab-2",
        ),
        (
            "hermes chat interfaces session 20990101_000000_abcdef workers hermes-lab-3",
            "hermes worker 'hermes-lab-3' is not registered with the broker; "
            "alive hermes workers: hermes-lab-1, hermes-lab-2",
        ),
        (
            "hermes session interfaces 20990101_000000_abcdef",
            "session '20990101_000000_abcdef' of agent 'interfaces' is not on any alive hermes worker serving the agent "
            "(asked hermes-lab-1, hermes-lab-2); sessions resume only on their own worker",
        ),
        ("hermes invoke bgp", "usage:"),
        ("hermes invoke bgp check status", "'invoke' takes quoted text"),  # not 'hermes status'
    ],
)
def test_routing_errors_are_clear(app, line, error):
    out = " ".join(nfcli(app, line).split())
    assert error in out
    assert "Traceback" not in out


def test_sessions_session_and_native_commands(nf, app):
    session_id = ids(nfcli(app, 'hermes invoke routing "Is [10.0.0.0/8] in the RIB?"'))["session"]
    out = nfcli(app, "hermes sessions routing")
    assert session_id in out
    assert "Is [10.0.0.0/8] in the RIB?" in out
    assert last_job(nf.client, "get_sessions")["workers_requested"] == [LAB1]

    out = nfcli(app, f"hermes session routing {session_id}")
    assert f"session {session_id} | agent routing | worker {LAB1}" in out
    assert "Is [10.0.0.0/8] in the RIB?" in out
    assert "ECHO: Is [10.0.0.0/8] in the RIB?" in out

    out = nfcli(app, f'hermes command routing "/usage" session {session_id}')
    sent = last_job(nf.client, "command")
    assert sent["workers_requested"] == LAB1
    assert sent["kwargs"] == {"agent": "routing", "command": "/usage", "session_id": session_id}
    assert "token" in out.lower()
    assert f"/usage | agent routing | worker {LAB1} | session {session_id}" in out


def test_interrupt_stops_a_running_turn(nf, app):
    future, run_id = start_invoke(nf.client, LAB1, agent="routing", instructions="SLEEP 30")
    out = nfcli(app, f"hermes interrupt routing run {run_id}")
    assert f"run {run_id} of agent 'routing' on worker '{LAB1}' is stopping" in " ".join(out.split())
    assert last_job(nf.client, "interrupt")["kwargs"] == {"agent": "routing", "run_id": run_id}
    assert result_of(future, LAB1)["result"]["stop_reason"] == "interrupted"


def test_chat_keeps_the_session_and_agent_switches_it(nf, app):
    prompts = []
    lines = ["hello", "again", "/sessions", "/agent interfaces", "on interfaces", "/agent routing workers hermes-lab-1"]
    out = nfcli(app, "hermes chat bgp", lines + ["on routing", "/exit"], prompts)
    assert prompts == ["hermes-lab-2/bgp> "] * 4 + ["hermes-lab-2/interfaces> "] * 2 + ["hermes-lab-1/routing> "] * 2
    invokes = nf.client.job_db.fetch_jobs(service="hermes", task="invoke", last=4)[::-1]
    sent = [(j["workers_requested"], j["kwargs"]["agent"], j["kwargs"]["instructions"]) for j in invokes]
    assert sent == [
        (LAB2, "bgp", "hello"),
        (LAB2, "bgp", "again"),
        (LAB2, "interfaces", "on interfaces"),
        (LAB1, "routing", "on routing"),
    ]
    sessions = [j["kwargs"]["session_id"] for j in invokes]
    assert sessions[0] is None
    assert sessions[1]
    assert sessions[2:] == [None, None]  # /agent starts a new session
    assert "ECHO: hello" in out
    assert "ECHO: again" in out
    assert "ECHO: on routing" in out
    assert "model request 1 started" in out  # live progress
    assert "sessions of 'bgp'" in out
    assert sessions[1] in out


def test_chat_passes_native_commands_and_leaves_on_ctrl_d(nf, app):
    out = nfcli(app, "hermes chat routing", ["first", "/usage", "/new", "fresh", "/agent nope", EOFError])
    invokes = nf.client.job_db.fetch_jobs(service="hermes", task="invoke", last=2)
    first, fresh = invokes[1], invokes[0]
    sent = last_job(nf.client, "command")
    first_session = first["result_data"][LAB1]["result"]["session_id"]
    assert sent["kwargs"] == {"agent": "routing", "command": "/usage", "session_id": first_session}
    assert first["kwargs"]["session_id"] is None
    assert fresh["kwargs"]["session_id"] is None  # /new
    assert "token" in out.lower()
    assert "ECHO: fresh" in out
    assert (
        "agent 'nope' not found; known agents: hermes-lab-1: interfaces, routing" in out
    )  # /agent looks on this worker
    assert "left chat" in out
    assert "ECHO: ok" in nfcli(app, 'hermes invoke routing "ok"')  # nf# still parses hermes commands


def test_ctrl_c_in_chat_interrupts_the_turn_not_the_shell(nf, app):
    handler = signal.getsignal(signal.SIGINT)

    def press_ctrl_c_once_running():
        deadline = time.time() + 30
        while time.time() < deadline and not run(nf.client, "get_status", LAB2)["result"]["active_runs"]:
            time.sleep(0.1)
        time.sleep(0.3)
        os.kill(os.getpid(), signal.SIGINT)  # a real Ctrl+C: NorFab's handler would stop NorFab

    threading.Thread(target=press_ctrl_c_once_running, daemon=True).start()
    out = nfcli(app, "hermes chat bgp", ["SLEEP 30", KeyboardInterrupt, "still here", "/exit"])
    assert "interrupting run" in out
    assert re.search(r"interrupted \| run \w+ \| session", out)
    first, second = nf.client.job_db.fetch_jobs(service="hermes", task="invoke", last=2)[::-1]
    assert second["kwargs"]["session_id"] == ids(out)["session"]  # the chat goes on in the same session
    assert "ECHO: still here" in out
    assert signal.getsignal(signal.SIGINT) == handler
    assert not nf.exiting


def test_on_a_terminal_ctrl_c_is_a_key_not_a_signal(monkeypatch):
    """A terminal Ctrl+C would signal nfcli's local broker and workers too; while a job runs it is read as a key."""
    master, slave = pty.openpty()
    with os.fdopen(slave, "r") as terminal:
        monkeypatch.setattr(sys, "stdin", terminal)
        before = termios.tcgetattr(slave)
        with CtrlC() as ctrl_c:
            assert not termios.tcgetattr(slave)[3] & termios.ISIG
            os.write(master, b"typed ahead\x03")
            time.sleep(0.1)
            assert ctrl_c.pressed()
            assert not ctrl_c.pressed()
            with ctrl_c.typing():  # an operator's answer is typed with echo, still without SIGINT
                lflag = termios.tcgetattr(slave)[3]
                assert lflag & termios.ECHO
                assert lflag & termios.ICANON
                assert not lflag & termios.ISIG
        assert termios.tcgetattr(slave) == before
    os.close(master)


def test_chat_without_an_agent_offers_a_choice(nf, app):
    prompts = []
    out = nfcli(app, "hermes chat", ["9", "3", "hi bgp", "/exit"], prompts)
    assert prompts[:2] == ["agent number 1-4 (Enter cancels): "] * 2
    assert prompts[2] == "hermes-lab-2/bgp> "
    assert "enter a number from 1 to 4" in out
    assert "ECHO: hi bgp" in out
    prompts = []
    nfcli(app, "hermes chat interfaces", ["2", "/exit"], prompts)  # a shared name: choose the worker
    assert prompts == ["agent number 1-2 (Enter cancels): ", "hermes-lab-2/interfaces> "]
