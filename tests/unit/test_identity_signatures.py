"""SSHSIG signatures against ssh-keygen itself, and the gate's checks of a proof (no NorFab)."""

import subprocess

import pytest

from norfab_hermes.identity import IdentityGate, ProofRefused, mint
from norfab_hermes.identity.audit import signature_problem
from norfab_hermes.identity.signatures import NAMESPACE, KeyFileSigner, SignatureError, fingerprint, key_blob, verify
from norfab_hermes.models import OperatorDefinition

MESSAGE = b'{"task":"approve"}'
KINDS = {"ed25519": [], "ecdsa": ["-b", "256"], "ecdsa384": ["-b", "384"]}


def keygen(tmp_path, kind):
    path = tmp_path / kind
    subprocess.run(
        ["ssh-keygen", "-q", "-t", kind.removesuffix("384"), *KINDS[kind], "-N", "", "-C", kind, "-f", str(path)],
        check=True,
    )
    return path


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_signatures_pass_both_ways_with_ssh_keygen(tmp_path, kind):
    path = keygen(tmp_path, kind)
    public = path.with_suffix(".pub").read_text()
    ours = KeyFileSigner.load(path).sign(MESSAGE)
    (tmp_path / "sig").write_text(ours)
    (tmp_path / "allowed").write_text(f"x {public}")
    checked = subprocess.run(
        ["ssh-keygen", "-Y", "verify", "-f", tmp_path / "allowed", "-I", "x", "-n", NAMESPACE, "-s", tmp_path / "sig"],
        input=MESSAGE,
        capture_output=True,
    )
    assert checked.returncode == 0, checked.stderr
    theirs = subprocess.run(
        ["ssh-keygen", "-q", "-Y", "sign", "-n", NAMESPACE, "-f", path], input=MESSAGE, capture_output=True
    ).stdout.decode()
    assert verify(MESSAGE, theirs) == key_blob(public)
    with pytest.raises(SignatureError, match="does not match"):
        verify(MESSAGE + b" ", theirs)


def test_another_namespace_is_refused(tmp_path):
    path = keygen(tmp_path, "ed25519")
    git = subprocess.run(
        ["ssh-keygen", "-q", "-Y", "sign", "-n", "git", "-f", path], input=MESSAGE, capture_output=True
    )
    with pytest.raises(SignatureError, match="namespace 'git'"):
        verify(MESSAGE, git.stdout.decode())


def test_the_gate_checks_every_field_of_the_claim(tmp_path):
    alice = KeyFileSigner.load(keygen(tmp_path, "ed25519"))
    line = (tmp_path / "ed25519.pub").read_text()
    gate = IdentityGate("w1", {"alice": OperatorDefinition(keys=[line], roles={"core-*": ["operator"]})})
    args = {"agent": "core-1", "instructions": "hi"}
    proof = mint(alice, "invoke", ["w1"], args, "c1")
    cases = [
        (("start_run", args, "c1"), "for task 'invoke'"),
        (("invoke", {**args, "instructions": "bye"}, "c1"), "other arguments"),
        (("invoke", args, "c2"), "for NorFab client 'c1'"),
    ]
    for (task, kwargs, client), text in cases:
        with pytest.raises(ProofRefused, match=text):
            gate.check(task, kwargs, client, proof)
    verified = gate.check("invoke", args, "c1", proof)
    assert verified.operator == "alice" and verified.fingerprint == fingerprint(key_blob(line))
    with pytest.raises(ProofRefused, match="replayed"):
        gate.check("invoke", args, "c1", proof)
    edge = {"agent": "edge-1", "instructions": "hi"}
    with pytest.raises(ProofRefused, match="needs role operator for agent 'edge-1'"):
        gate.check("invoke", edge, "c1", mint(alice, "invoke", ["w1"], edge, "c1"))
    with pytest.raises(ProofRefused, match="for workers w2"):
        gate.check("invoke", args, "c1", mint(alice, "invoke", ["w2"], args, "c1"))
    assert signature_problem(1, {"signed": verified.audit()}, gate.public_keys()) is None
    assert "belongs to no operator" in signature_problem(1, {"signed": verified.audit()}, {})
    gate.close("operators could not be read")
    with pytest.raises(ProofRefused, match="could not be read"):
        gate.check("invoke", args, "c1", mint(alice, "invoke", ["w1"], args, "c1"))
    gate.load({})
    assert gate.check("invoke", args, "c1", None) is None  # no operators: as before


def test_a_worker_signs_what_it_asks_another_worker_with_its_own_key(tmp_path):
    """delegation_key: the asked worker's gate takes the job as the asking worker's operator; no key, no proof."""
    from types import SimpleNamespace

    from norfab_hermes.errors import InventoryError
    from norfab_hermes.identity.keys import new_key
    from norfab_hermes.worker.tools.delegation import Delegator, delegation_signer

    sent = []

    class Client:
        name = "hermes-worker-1-NFPClient"

        def submit_job(self, service, task, kwargs, workers, timeout):
            sent.append((task, kwargs, workers))

    line = new_key(tmp_path / "w1", "hermes-worker-1")
    signer = delegation_signer(SimpleNamespace(delegation_key=str(tmp_path / "w1")))
    asked = IdentityGate(
        "hermes-worker-2", {"hermes-worker-1": OperatorDefinition(keys=[line], roles={"routing": ["operator"]})}
    )
    Delegator(Client(), "hermes-worker-1", list, signer).submit("invoke", "hermes-worker-2", {"agent": "routing"}, 10)
    Delegator(Client(), "hermes-worker-1", list).submit("invoke", "hermes-worker-2", {"agent": "routing"}, 10)
    (task, kwargs, workers), (_, unsigned, _) = sent
    proof = kwargs.pop("proof")
    assert asked.check(task, kwargs, Client.name, proof, job="J1").operator == "hermes-worker-1"
    assert "proof" not in unsigned and workers == ["hermes-worker-2"]
    with pytest.raises(ProofRefused, match="needs role operator for agent 'bgp'"):
        asked.check(
            "invoke", {"agent": "bgp"}, Client.name, mint(signer, "invoke", workers, {"agent": "bgp"}, Client.name)
        )
    assert delegation_signer(SimpleNamespace(delegation_key=None)) is None
    with pytest.raises(InventoryError, match="delegation_key:"):
        delegation_signer(SimpleNamespace(delegation_key=str(tmp_path / "missing")))
