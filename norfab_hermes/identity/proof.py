"""
A proof: an operator's SSH signature over one request's claim (task, workers,
agent, arguments digest, client, issued, expires, nonce, and for a decision
the change digest). On the wire it is one string, so that REST and MCP
callers pass it as the ``proof`` argument like any other.
"""

import base64
import hashlib
import json
import secrets
import time
from typing import Any, Dict, List, Optional, Tuple

from pydantic import ValidationError

from ..models import ProofClaim, describe_validation_error
from .signatures import SignatureError, Signer

MAX_LIFETIME = 300.0  # seconds a proof may be valid for, at most
LIFETIME = 120.0  # what clients ask for
NOT_ARGUMENTS = ("proof", "job", "progress")  # the proof itself and what NorFab adds


def canonical(data: Any) -> bytes:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str).encode()


def arguments_digest(kwargs: Dict[str, Any]) -> str:
    """sha256 of a task's arguments as sent: what a proof binds."""
    return hashlib.sha256(canonical({k: v for k, v in kwargs.items() if k not in NOT_ARGUMENTS})).hexdigest()


def mint(
    signer: Signer,
    task: str,
    workers: List[str],
    kwargs: Dict[str, Any],
    client: str,
    subject: Optional[str] = None,
    lifetime: float = LIFETIME,
) -> str:
    """A proof for sending ``task`` with ``kwargs`` to ``workers`` as NorFab client ``client``.

    A console session's signer (``grant.SessionSigner``) carries its operator's grant: the claim
    holds it, so that the worker (and the audit log) can tell whose session key signed.

    Args:
        signer: ``identity.signer_for(path)`` (ssh-agent or key file).
        task: hermes task name.
        workers: the worker names the job goes to.
        kwargs: the task's arguments exactly as sent (without ``proof``).
        client: the NorFab client name the job is sent with.
        subject: approve and deny: the approval's change_digest (or arguments_digest).
        lifetime: seconds the proof is valid, at most 300.
    """
    issued = time.time()
    claim = ProofClaim(
        task=task,
        workers=list(workers),
        agent=kwargs.get("agent"),
        args=arguments_digest(kwargs),
        client=client,
        issued=issued,
        expires=issued + min(lifetime, MAX_LIFETIME),
        nonce=secrets.token_hex(16),
        subject=subject,
        grant=getattr(signer, "grant", None),
    )
    message = canonical(claim.model_dump())
    wire = {"claim": claim.model_dump(), "signature": signer.sign(message)}
    return base64.urlsafe_b64encode(canonical(wire)).decode()


def parse(proof: str) -> Tuple[ProofClaim, bytes, str]:
    """(claim, the signed message, the armored signature) of a proof string; SignatureError when malformed."""
    try:
        wire = json.loads(base64.urlsafe_b64decode(proof.encode()))
        claim = ProofClaim.model_validate(wire["claim"])
        signature = wire["signature"]
    except ValidationError as error:
        raise SignatureError(describe_validation_error(error, "proof claim")) from None
    except (ValueError, KeyError, TypeError):
        raise SignatureError("not a hermes proof: mint one with python -m norfab_hermes.identity") from None
    if not isinstance(signature, str):
        raise SignatureError("not a hermes proof: its signature is not an armored SSH signature")
    return claim, canonical(wire["claim"]), signature
