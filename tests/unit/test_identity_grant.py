"""Console grants: an operator's key vouching for a console session's key, checked by the gate (no NorFab)."""

import time

import pytest

from norfab_hermes.identity import IdentityGate, ProofRefused, mint
from norfab_hermes.identity.audit import signature_problem
from norfab_hermes.identity.grant import MAX_GRANT_LIFETIME, SessionSigner, make_grant
from norfab_hermes.models import OperatorDefinition

WORKER = "hermes-worker-1"
CLIENT = "hermes-web"
ARGS = {"agent": "fixer", "approval_id": "a1", "note": "ok"}


def operator(signer, roles):
    return OperatorDefinition(keys=[signer.public_line], roles=roles)


@pytest.fixture
def keys():
    """Operator keys (in memory, the way a key file signs) and the gate of a worker naming lead and vera."""
    lead, vera, mallory = SessionSigner(), SessionSigner(), SessionSigner()
    gate = IdentityGate(
        WORKER, {"lead": operator(lead, {"*": ["approver"]}), "vera": operator(vera, {"*": ["viewer"]})}
    )
    return gate, lead, vera, mallory


def session(operator_key, name="lead", lifetime=3600.0, grant_for=None):
    """A console session whose grant ``operator_key`` signed as ``name`` (for another session's key with ``grant_for``)."""
    signer = SessionSigner()
    signer.grant = make_grant(operator_key, name, (grant_for or signer).public_line, "http://127.0.0.1:9", lifetime)
    return signer


def request(signer, task="approve", **changes):
    return mint(signer, task, [WORKER], {**ARGS, **changes}, CLIENT, subject="digest")


def test_a_granted_session_key_acts_as_its_operator_with_their_roles(keys):
    gate, lead, vera, _ = keys
    verified = gate.check("approve", ARGS, CLIENT, request(session(lead)))
    assert verified.operator == "lead" and verified.fingerprint.startswith("SHA256:")
    assert verified.subject == "digest"
    with pytest.raises(ProofRefused, match="operator 'vera' may not approve: it needs role approver"):
        gate.check("approve", ARGS, CLIENT, request(session(vera, "vera")))
    # the audit log keeps the request's claim with its grant: it verifies offline against the operators' keys
    keys_by_fingerprint = {verified.fingerprint: "lead"}
    assert signature_problem(1, {"signed": verified.audit()}, keys_by_fingerprint) is None
    assert "belongs to no operator" in signature_problem(1, {"signed": verified.audit()}, {})


def test_forged_expired_or_borrowed_grants_are_refused(keys):
    gate, lead, _, mallory = keys
    with pytest.raises(ProofRefused, match="grant: made by key .* which no operator"):
        gate.check("approve", ARGS, CLIENT, request(session(mallory, "mallory")))
    with pytest.raises(ProofRefused, match="grant: it names operator 'vera', but key .* is operator 'lead''s"):
        gate.check("approve", ARGS, CLIENT, request(session(lead, "vera")))
    expired = session(lead, lifetime=1)
    proof = request(expired)
    with pytest.raises(ProofRefused, match="grant: expired"):
        gate.check("approve", ARGS, CLIENT, proof, now=time.time() + 5)
    # a grant lifted from another session does not vouch for this one's key
    other = SessionSigner()
    borrowed = session(lead, grant_for=other)
    with pytest.raises(ProofRefused, match="grant: it vouches for session key"):
        gate.check("approve", ARGS, CLIENT, request(borrowed))
    too_long = SessionSigner()
    too_long.grant = make_grant(lead, "lead", too_long.public_line, "console", MAX_GRANT_LIFETIME * 2)
    gate.check("approve", ARGS, CLIENT, request(too_long))  # capped at the maximum by make_grant
    # without a grant the session key is nobody's
    with pytest.raises(ProofRefused, match="which no operator of worker"):
        gate.check("approve", ARGS, CLIENT, request(SessionSigner()))


def test_a_grant_does_not_loosen_the_request_checks(keys):
    gate, lead, _, _ = keys
    signer = session(lead)
    with pytest.raises(ProofRefused, match="signed for other arguments"):
        gate.check("approve", {**ARGS, "note": "changed"}, CLIENT, request(signer))
    proof = request(signer)
    gate.check("approve", ARGS, CLIENT, proof)
    with pytest.raises(ProofRefused, match="replayed"):
        gate.check("approve", ARGS, CLIENT, proof)
    gate.load({})  # the operator's key removed: their sessions stop with it
    gate.load({"vera": operator(SessionSigner(), {"*": ["viewer"]})})
    with pytest.raises(ProofRefused, match="grant: made by key"):
        gate.check("approve", ARGS, CLIENT, request(signer))
