"""
What identity adds to a request: an operator's proof minted (key file, in-process) and checked
by the worker's gate, for Ed25519 and ECDSA P-256 keys. A continued turn through the router signs
three requests (get_agents to find the agent, get_session to find its owner, invoke). Measured
in-process without NorFab, so the figure is the signing and verifying alone.
"""

import subprocess
import tempfile
import time
from pathlib import Path

from norfab_hermes.identity import IdentityGate, mint
from norfab_hermes.identity.signatures import KeyFileSigner
from norfab_hermes.models import OperatorDefinition

REQUESTS = 300
PER_TURN = 3


def run(model_url: str) -> list:
    rows = []
    with tempfile.TemporaryDirectory() as directory:
        for kind, extra in (("ed25519", []), ("ecdsa", ["-b", "256"])):
            path = Path(directory) / kind
            subprocess.run(["ssh-keygen", "-q", "-t", kind, *extra, "-N", "", "-f", str(path)], check=True)
            signer = KeyFileSigner.load(path)
            operator = OperatorDefinition(keys=[path.with_suffix(".pub").read_text()], roles={"*": ["operator"]})
            gate = IdentityGate("w1", {"alice": operator})
            kwargs = {"agent": "a1", "instructions": "go on", "session_id": "s1"}
            started = time.perf_counter()
            for _ in range(REQUESTS):
                gate.check("invoke", kwargs, "c1", mint(signer, "invoke", ["w1"], kwargs, "c1"))
            per_request = (time.perf_counter() - started) * 1000 / REQUESTS
            note = f"mint + check, {REQUESTS} requests; a continued turn signs {PER_TURN}"
            rows.append(
                dict(
                    benchmark="identity",
                    metric=f"{kind} per request",
                    value=round(per_request, 3),
                    unit="ms",
                    note=note,
                )
            )
            rows.append(
                dict(
                    benchmark="identity",
                    metric=f"{kind} per continued turn",
                    value=round(per_request * PER_TURN, 3),
                    unit="ms",
                    note="budget: 5 ms (issue 29)",
                )
            )
    return rows
