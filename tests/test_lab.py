"""
The shipped lab, as a user meets it (one module: the lab listens on fixed ports, so its tests never
run side by side). `make demo`: its findings quote the FakeNOS routers' output. `make shell` in a
real terminal: examples/lab/shell.py on a pseudo-terminal 80 columns wide, typed
into through nfcli's own prompt (prompt_toolkit). It opens without NorFab's log records over the
prompt, its tables fit, a `?` typed inside quotes reaches the agent, the reply shows once, and
`exit` leaves quietly.
"""

import fcntl
import os
import pty
import re
import select
import signal
import socket
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LAB_BROKER = ("127.0.0.1", 5855)  # examples/lab/inventory.yaml
DEMO = Path(__file__).resolve().parents[1] / "examples" / "lab" / "demo.py"
COLUMNS = 80
ESCAPES = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\r")
LOG_RECORD = re.compile(r"\d\d:\d\d:\d\d\.\d+ (WARNING|ERROR|CRITICAL) \[")  # NorFab's terminal log format


def lab_is_running() -> bool:
    try:
        socket.create_connection(LAB_BROKER, timeout=1).close()
        return True
    except OSError:
        return False


class Terminal:
    """A process on a pseudo-terminal of COLUMNS columns: keys in, screen text out."""

    def __init__(self, command: list) -> None:
        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, COLUMNS, 0, 0))
        env = {k: v for k, v in os.environ.items() if not k.startswith("NORFAB_HERMES_")}  # the scripted model
        self.process = subprocess.Popen(
            command,
            cwd=ROOT,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env={**env, "TERM": "xterm"},
            start_new_session=True,
        )
        os.close(slave)
        self.output = b""

    def wait_for(self, pattern: str, timeout: float) -> str:
        """The screen text so far, once ``pattern`` shows in what came after the last call."""
        start, deadline = len(self.output), time.time() + timeout
        while time.time() < deadline:
            if select.select([self.master], [], [], 0.5)[0]:
                try:
                    data = os.read(self.master, 65536)
                except OSError:
                    break
                self.output += data
                if b"\x1b[6n" in data:  # prompt_toolkit asks where the cursor is
                    os.write(self.master, b"\x1b[1;1R")
            if re.search(pattern, self.text(start)):
                return self.text(start)
        raise AssertionError(f"{pattern!r} did not show in {timeout:.0f}s:\n{self.text(start)[-3000:]}")

    def text(self, start: int = 0) -> str:
        return ESCAPES.sub(b"", self.output[start:]).decode(errors="replace")

    def type(self, keys: str) -> None:
        os.write(self.master, keys.encode())

    def close(self) -> None:
        """Leave as an operator does, so the lab stops the core worker it started in a session of its
        own; a signal only if that does not work."""
        for stop in (lambda: self.type("\x03exit\r"), lambda: os.killpg(self.process.pid, signal.SIGINT)):
            if self.process.poll() is None:
                stop()
                try:
                    self.process.wait(60)
                except subprocess.TimeoutExpired:
                    pass
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(30)
        os.close(self.master)


@pytest.mark.skipif(lab_is_running(), reason="the lab's broker port 5855 is taken: another lab is running")
def test_make_shell_in_an_80_column_terminal():
    shell = Terminal([sys.executable, "examples/lab/shell.py"])
    try:
        opening = shell.wait_for(r"nf#", 180)
        assert not LOG_RECORD.search(opening), opening  # no broker WARNING/ERROR over the prompt

        shell.type("hermes agents\r")
        agents = shell.wait_for(r"└", 60)
        rows = [line for line in agents.splitlines() if line.startswith(("┏", "┃", "┡", "│", "└"))]
        assert rows, agents
        assert max(len(line) for line in rows) <= COLUMNS, agents
        assert re.search(r"│ hermes-worker-1 │ interfaces │ yes", agents)
        # which agents can change the network stays in view at 80 columns (model and state go first)
        assert re.search(r"│ hermes-worker-1 │ interfaces │ yes\s+│ bounce_interf", agents), agents
        assert re.search(r"│ hermes-worker-2 │ routing +│", agents)

        shell.type('hermes invoke routing "Why does traffic go through r2?"\r')
        reply = shell.wait_for(r"continue with:", 120)
        assert "Enter command subshell" not in reply  # the ? did not open PICLE's help
        assert reply.count("ECHO: Why does traffic go through r2?") == 1, reply  # sent whole, shown once

        shell.type("exit\r")
        closing = shell.wait_for(r"Exiting", 60)
        assert shell.process.wait(90) == 0
        assert not LOG_RECORD.search(shell.text()), closing
    finally:
        shell.close()


def test_demo_investigates_the_lab_and_quotes_device_output():
    # the scripted model, whatever provider this machine is configured for
    env = {k: v for k, v in os.environ.items() if not k.startswith("NORFAB_HERMES_")}
    done = subprocess.run([sys.executable, str(DEMO)], capture_output=True, text=True, timeout=240, env=env)
    out = done.stdout
    assert done.returncode == 0, done.stderr[-3000:]
    # interfaces: evidence from r1's device model (examples/lab/fakenos/nos/r1.yaml)
    assert "GigabitEthernet0/2     192.0.2.1       YES NVRAM  down                  down" in out
    assert "1204 input errors, 1187 CRC, 0 frame, 0 overrun, 0 ignored" in out
    # identity on: noc asks, and its change waits for another operator, lead (four eyes)
    assert (
        out.count(
            "identity: requests must be signed by an operator's SSH key (4: hermes-worker-1, hermes-worker-2, lead, noc)"
        )
        == 2
    )
    assert (
        re.search(r"nf# hermes approve \w+ +\(operator lead, with lead's key: four eyes\)", out)
        and "approved by lead" in out
    )
    assert re.search(r"tool bounce_interface completed, job \w{12}\.interfaces\.noc\.\w{12}", out), out
    assert "tool bounce_interface completed" in out
    assert "open a field ticket for customer ACME-7 access, circuit ACM-00731" in out
    # routing, asked by interfaces on the other worker process: r3's route via r2 and the MTU mismatch
    assert "GigabitEthernet0/1     10.13.0.2       YES NVRAM  up                    up" in out
    assert "routing@hermes-worker-2: tool route_to completed" in out
    assert re.search(r"tool ask_routing +completed .* -> routing@hermes-worker-2 run \w+ session \w+", out), out
    assert "* 10.23.0.1, from 10.0.0.1, 2d02h ago, via GigabitEthernet0/0" in out
    assert "r3 has 1400 bytes, r1 has 1500 bytes" in out
    assert out.count("completed | run ") == 2
    # the interface check as a schedule: fired on its own, reported, changed nothing
    assert "nf# hermes history interfaces schedule r1-interfaces" in out
    assert "ok | due " in out
    assert "tool bounce_interface  refused" in out
    assert "a scheduled run reaches a change only through the approval inbox with a named approver" in out
    assert "Recommended: 1187 CRC and 14 carrier transitions point at the physical layer" in out.replace(
        "**", ""
    ).replace("\n  ", " ")
