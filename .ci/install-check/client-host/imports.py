"""
What the client side must give, and must not bring: the nf# shell plugin and the Python client
import; Hermes Agent, jsonschema and the worker code are not there.
"""

import importlib.util
import sys

from norfab_hermes.nfcli_shell import HermesShell  # noqa: F401
from norfab_hermes.routing import Hermes  # noqa: F401

present = [
    name for name in ("gateway", "run_agent", "hermes_cli", "cron", "jsonschema") if importlib.util.find_spec(name)
]
loaded = [name for name in sys.modules if name.startswith("norfab_hermes.worker")]
assert not present and not loaded, f"on the client side: {present + loaded}"
print("imported HermesShell and Hermes; no Hermes, no worker code in this environment")
