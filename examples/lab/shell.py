"""
nfcli (nf#) on the lab, with the hermes shell mounted.

    python examples/lab/shell.py            (or: make shell)

Starts the scripted model on 127.0.0.1:8400 (the lab's default model
address) unless NORFAB_HERMES_BASE_URL points at a real provider, then opens
NorFab's interactive shell on examples/lab/inventory.yaml. Once the broker is
up, the core worker (hermes-worker-2) starts as a process of its own from
core/inventory.yaml, as on another host. The scripted model follows the demo
(scenarios/demo.yaml) and the operator jobs' playbooks (eval/playbooks). Try:

    nf# hermes agents
    nf# hermes invoke interfaces "Check interfaces on r1"
    nf# hermes invoke interfaces "Users behind r3 say r1's loopback 10.0.0.1 is slow"
    nf# hermes chat routing
    nf# hermes invoke service "Customer A cannot reach their application. Find where it breaks."
    nf# hermes invoke change "Can we take core1 out of service tonight for its software upgrade?"

Identity is on, as in the demo: this shell signs as operator noc with the
key the lab made under identity/. A change an agent asks for waits in the
inbox for another operator, lead (four eyes): approve it as lead over REST,
see docs/quick-start.md.
"""

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from demo import LAB, lab_identity
from norfab.clients.nfcli_shell.nfcli_shell_client import start_picle_shell

from norfab_hermes.testing.embedded import broker_shared_key
from norfab_hermes.testing.scenario import Scenario
from norfab_hermes.testing.scripted_model import ScriptedModel, ScriptedModelServer

BROKER = ("127.0.0.1", 5855)  # the lab broker's endpoint (inventory.yaml)


def start_core_worker(processes: list) -> None:
    """The core worker, once the broker listens: ``nfcli -i inventory.yaml -w`` in core/."""
    while True:
        try:
            socket.create_connection(BROKER, timeout=1).close()
            break
        except OSError:
            time.sleep(0.5)
    env = {**os.environ, "NORFAB_BROKER_SHARED_KEY": broker_shared_key(LAB)}
    log = open(LAB / "core" / "hermes-worker-2.out", "ab")
    nfcli = Path(sys.executable).with_name("nfcli")
    processes.append(
        subprocess.Popen(
            [str(nfcli), "-i", "inventory.yaml", "-w"],
            cwd=LAB / "core",
            env=env,
            stdout=log,
            stderr=log,
            start_new_session=True,
        )
    )


if __name__ == "__main__":
    model = None
    if not os.environ.get("NORFAB_HERMES_BASE_URL"):
        playbooks = sorted((LAB / "eval" / "playbooks").glob("*.yaml"))
        scenario = Scenario.from_files([str(LAB / "scenarios" / "demo.yaml"), *map(str, playbooks)])
        model = ScriptedModelServer(ScriptedModel(scenario=scenario), port=8400)
        model.start()
    lab_identity()  # operators on: this shell signs as noc (NORFAB_HERMES_KEY); lead approves its changes
    core: list = []
    threading.Thread(target=start_core_worker, args=(core,), daemon=True).start()
    try:
        # log_level None: the inventory's logging applies (terminal: CRITICAL), as with plain nfcli;
        # start_picle_shell's default (WARNING) would print the broker's start-up chatter over the prompt
        start_picle_shell(inventory=str(LAB / "inventory.yaml"), run_broker=True, run_workers=True, log_level=None)
    finally:
        for process in core:
            os.killpg(process.pid, signal.SIGINT)
            process.wait(30)
        if model:
            model.stop()
