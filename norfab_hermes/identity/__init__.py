"""
Who is asking: operators' SSH keys sign each request to a hermes worker and
the worker checks the signature, the request it covers and the operator's
role. Pure logic, used by the worker and by clients that sign (never Hermes).
"""

from .gate import IdentityGate, ProofRefused, Verified
from .proof import arguments_digest, mint
from .signatures import NAMESPACE, SignatureError, fingerprint, signer_for

__all__ = [
    "IdentityGate",
    "NAMESPACE",
    "ProofRefused",
    "SignatureError",
    "Verified",
    "arguments_digest",
    "fingerprint",
    "mint",
    "signer_for",
]
