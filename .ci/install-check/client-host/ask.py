"""
What a script on a client host does: connect to the running broker, read the hermes workers'
versions and ask an agent. Prints one JSON line. Usage: python ask.py AGENT QUESTION
"""

import json
import sys
import time

from norfab.core.nfapi import NorFab

from norfab_hermes.routing import Hermes

agent, question = sys.argv[1:3]
with NorFab(inventory="inventory.yaml") as nf:
    deadline = time.monotonic() + 120
    while True:  # a worker answers once it has registered with the broker
        versions = nf.client.run_job("hermes", "get_version", workers="all", timeout=10) or {}
        if versions or time.monotonic() > deadline:
            break
        time.sleep(1)
    reply = Hermes(nf.client).invoke(agent, question, timeout=60)
    print(json.dumps({"versions": versions, "invoke": reply}, default=str))
