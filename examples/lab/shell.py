"""
nfcli (nf#) on the lab, with the hermes shell mounted.

    python examples/lab/shell.py            (or: make shell)

Starts the scripted model on 127.0.0.1:8400 (the lab's default model
address) unless NORFAB_HERMES_BASE_URL points at a real provider, then opens
NorFab's interactive shell on examples/lab/inventory.yaml. Try:

    nf# hermes agents
    nf# hermes invoke interfaces "Check interfaces on r1"
    nf# hermes chat routing
"""

import os

from demo import LAB
from norfab.clients.nfcli_shell.nfcli_shell_client import start_picle_shell

from norfab_hermes.testing.scenario import Scenario
from norfab_hermes.testing.scripted_model import ScriptedModel, ScriptedModelServer

if __name__ == "__main__":
    model = None
    if not os.environ.get("NORFAB_HERMES_BASE_URL"):
        scenario = Scenario.from_file(str(LAB / "scenarios" / "demo.yaml"))
        model = ScriptedModelServer(ScriptedModel(scenario=scenario), port=8400)
        model.start()
    try:
        start_picle_shell(inventory=str(LAB / "inventory.yaml"), run_broker=True, run_workers=True)
    finally:
        if model:
            model.stop()
