"""
What identity adds to a request and to a continued turn.

In-process (no NorFab): an operator's proof minted (key file) and checked by
the worker's gate, for Ed25519 and ECDSA P-256 keys; the figure is the
signing and verifying alone.

Through NorFab, in one run: one NorFab with two hermes workers on the same
scripted model, ``hermes-open`` (no operators) and ``hermes-signed``
(operators), and the Python client's continued turns to each, interleaved,
as ``nf# hermes invoke AGENT "..." session ID workers WORKER`` sends them
(the continue line the shell prints): get_agents and invoke, each to the
agent's own worker only, so that neither kind of turn waits for the other
worker. The signed turns sign both requests (Ed25519 key file); the worker
checks each proof and records its nonce. Median and p95 of each, what identity adds to them,
and the median of the paired differences (each signed turn less the
unsigned turn next to it), which a busy machine disturbs least.
"""

import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List

from common import added_rows, interleaved, row

from norfab_hermes.identity import IdentityGate, mint
from norfab_hermes.identity.keys import new_key
from norfab_hermes.identity.signatures import KeyFileSigner
from norfab_hermes.models import OperatorDefinition
from norfab_hermes.routing import Hermes
from norfab_hermes.testing.embedded import hermes_worker, running_norfab

REQUESTS = 300
PER_TURN = 3  # nf# hermes invoke AGENT "..." session ID: get_agents, get_session, invoke
TURNS = 100  # continued turns measured with identity and as many without, interleaved
WARM_UP = 3
OPEN, SIGNED = "hermes-open", "hermes-signed"
BUDGET_MS = 5.0  # issue 29: at most 5 ms added to a continued turn


def per_request(directory: Path) -> List[Dict[str, Any]]:
    rows = []
    for kind, extra in (("ed25519", []), ("ecdsa", ["-b", "256"])):
        path = directory / kind
        subprocess.run(["ssh-keygen", "-q", "-t", kind, *extra, "-N", "", "-f", str(path)], check=True)
        signer = KeyFileSigner.load(path)
        operator = OperatorDefinition(keys=[path.with_suffix(".pub").read_text()], roles={"*": ["operator"]})
        gate = IdentityGate("w1", {"alice": operator})
        kwargs = {"agent": "a1", "instructions": "go on", "session_id": "s1"}
        started = time.perf_counter()
        for _ in range(REQUESTS):
            gate.check("invoke", kwargs, "c1", mint(signer, "invoke", ["w1"], kwargs, "c1"))
        each = (time.perf_counter() - started) * 1000 / REQUESTS
        note = f"mint + check in-process, {REQUESTS} requests; a continued turn signs {PER_TURN}"
        rows.append(row("identity", f"{kind} per request", each, "ms", note))
        rows.append(row("identity", f"{kind} per continued turn", each * PER_TURN, "ms", "in-process, no NorFab"))
    return rows


def continued_turns(url: str, directory: Path) -> List[Dict[str, Any]]:
    public = new_key(directory / "bench-operator", "bench-operator")
    operators = {"bench": {"keys": [public], "roles": {"*": ["operator"]}}}
    workers = {
        OPEN: hermes_worker(url, {"open": {"instructions": "You echo."}}),
        SIGNED: hermes_worker(url, {"signed": {"instructions": "You echo."}}, operators=operators),
    }
    for inventory in workers.values():
        inventory["model"]["default"] = "scripted-model"  # without one Hermes probes /models every turn
    (directory / "norfab").mkdir()
    with running_norfab(directory / "norfab", workers) as nf:
        hermes = {
            "open": Hermes(nf.client, signer=None),
            "signed": Hermes(nf.client, signer=KeyFileSigner.load(directory / "bench-operator")),
        }
        sessions = {}
        for agent, client in hermes.items():
            first = client.invoke(agent, "start")
            if first["failed"]:
                raise RuntimeError(f"{agent}: {first['errors']}")
            sessions[agent] = first["result"]["session_id"]

        def turn(agent: str) -> Any:
            worker = OPEN if agent == "open" else SIGNED

            def one(i: int) -> None:
                reply = hermes[agent].invoke(agent, f"again {i}", session_id=sessions[agent], workers=worker)
                if reply["failed"]:
                    raise RuntimeError(f"{agent}: {reply['errors']}")

            return one

        times = interleaved({"open": turn("open"), "signed": turn("signed")}, TURNS, WARM_UP)
    note = f"{TURNS} continued turns each, interleaved, Python client via the router (2 requests a turn)"
    labels = {"open": "without identity", "signed": "with identity"}
    return added_rows("identity", times, "open", "signed", labels, note, f"budget: {BUDGET_MS:.0f} ms")


def run(model_url: str) -> list:
    with tempfile.TemporaryDirectory() as directory:
        return per_request(Path(directory)) + continued_turns(model_url, Path(directory))
