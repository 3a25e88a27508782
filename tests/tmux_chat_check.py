"""
Drive a real interactive ``nfcli`` in tmux through one ``hermes chat``: a turn,
a Ctrl+C that interrupts a slow turn, a native command and ``/exit``.

Not part of the pytest run (it needs tmux and a terminal-sized pane); run it
by hand and read the pane it prints::

    .venv/bin/python tests/tmux_chat_check.py [--keep]

It starts the scripted model (``python -m norfab_hermes.testing.scripted_model``)
and ``nfcli`` on a throwaway inventory with one hermes worker and the
``plugins: hermes: nfcli`` mount, then types into the pane with
``tmux send-keys``. Exit status 0 means every expected line appeared.
"""

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
SESSION = "hermes-chat-check"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], check=True, capture_output=True, text=True).stdout


def pane() -> str:
    return tmux("capture-pane", "-p", "-J", "-S", "-200", "-t", SESSION)


def wait_for(text: str, timeout: float = 90, after: int = 0) -> None:
    """Wait until ``text`` shows in the pane at least ``after + 1`` times."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if pane().count(text) > after:
            return
        time.sleep(0.2)
    raise TimeoutError(f"'{text}' did not appear within {timeout:.0f}s; pane:\n{pane()}")


def send(*keys: str) -> None:
    tmux("send-keys", "-t", SESSION, *keys)


def alive() -> bool:
    return subprocess.run(["tmux", "has-session", "-t", SESSION], capture_output=True).returncode == 0


def stop_nfcli() -> None:
    """Leave nfcli the normal way so it stops its broker and worker; killing the pane would orphan them."""
    for keys in ([], ["C-c"], ["/exit", "Enter"], ["exit", "Enter"]):
        if keys and alive():
            send(*keys)
        deadline = time.time() + 30
        while time.time() < deadline and alive():
            time.sleep(0.5)
    subprocess.run(["tmux", "kill-session", "-t", SESSION], capture_output=True)


def inventory(base: Path, model_url: str) -> None:
    worker = {
        "service": "hermes",
        "model": {"provider": "custom", "base_url": model_url, "context_length": 131072},
        "agents": {"interfaces": {"instructions": "You check interfaces.", "description": "Interface checks"}},
    }
    data = {
        "broker": {"endpoint": f"tcp://127.0.0.1:{free_port()}"},
        "logging": {"handlers": {"terminal": {"level": "CRITICAL"}, "file": {"level": "INFO"}}},
        "topology": {"broker": True, "workers": ["hermes-lab-1"]},
        "workers": {"hermes-lab-1": [worker]},
        "plugins": {
            "hermes": {"nfcli": {"mount_path": "hermes", "shell_model": "norfab_hermes.nfcli_shell:HermesShell"}}
        },
    }
    (base / "inventory.yaml").write_text(yaml.safe_dump(data, sort_keys=False))


def main() -> int:
    parser = argparse.ArgumentParser(description="tmux-driven check of 'hermes chat' in a real nfcli")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory (logs, inventory)")
    args = parser.parse_args()
    if not shutil.which("tmux"):
        print("tmux is not installed: install it (e.g. 'apt-get install tmux') to run this check", file=sys.stderr)
        return 2

    base = Path(tempfile.mkdtemp(prefix="hermes-tmux-"))
    port = free_port()
    inventory(base, f"http://127.0.0.1:{port}/v1")
    model = subprocess.Popen(
        [sys.executable, "-m", "norfab_hermes.testing.scripted_model", "--port", str(port)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    subprocess.run(["tmux", "kill-session", "-t", SESSION], capture_output=True)
    try:
        env = f"env COLUMNS=110 PATH={BIN}:{os.environ['PATH']}"
        nfcli = f"{env} {BIN / 'nfcli'} -i inventory.yaml"
        tmux("new-session", "-d", "-s", SESSION, "-x", "110", "-y", "50", "-c", str(base), nfcli)
        wait_for("nf#", timeout=120)
        time.sleep(3)  # the worker registers with the broker a moment after the prompt shows
        send("hermes chat interfaces", "Enter")
        wait_for("hermes-lab-1/interfaces>")
        send("Check interfaces on r1: is [Gi1] down?", "Enter")
        wait_for("ECHO: Check interfaces on r1: is [Gi1] down?")
        wait_for("hermes-lab-1/interfaces>", after=1)
        send("SLEEP 30", "Enter")
        wait_for("model request 1 started", after=1)
        time.sleep(0.5)
        send("C-c")
        wait_for("interrupted | run")
        wait_for("hermes-lab-1/interfaces>", after=2)
        send("/usage", "Enter")
        wait_for("Session Token Usage")
        send("/exit", "Enter")
        wait_for("left chat")
        wait_for("nf#", after=1)
        capture = pane()
        send("exit", "Enter")
        print(capture.rstrip())
        print(f"\nOK: chat turn, Ctrl+C interrupt, native command and /exit in a real nfcli ({base})")
        return 0
    except (TimeoutError, subprocess.CalledProcessError) as error:
        print(f"FAILED: {error}", file=sys.stderr)
        return 1
    finally:
        stop_nfcli()
        model.terminate()
        model.wait(timeout=10)
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
