"""
A console grant: an operator's SSH key vouching, for a few hours, for the
key a console made for one browser session. The session key stays in the
console's process (never in the browser); the console signs each request
with it and carries the grant in the request's claim. The worker takes such
a request as the operator's when the grant verifies under a key the
operator holds now, names the key that signed the request and has not
expired (``gate.py``); an exported audit log checks the same offline
(``audit.py``). Pure logic.
"""

import base64
import json
import secrets
import time
from dataclasses import dataclass, field
from typing import Optional, Tuple

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519
from pydantic import ValidationError

from ..models import GrantClaim, describe_validation_error
from .proof import canonical
from .signatures import SignatureError, Signer, fingerprint, key_blob, sign_with, verify

MAX_GRANT_LIFETIME = 12 * 3600.0  # seconds a grant may be valid for, at most: a shift
GRANT_LIFETIME = 8 * 3600.0  # what the grant command asks for by default


@dataclass
class SessionSigner:
    """A console session's own Ed25519 key (in memory only) and, once the operator signed it, their grant.

    ``mint`` puts the grant in the claim of every request this signer signs.
    """

    key: ed25519.Ed25519PrivateKey = field(default_factory=ed25519.Ed25519PrivateKey.generate)
    grant: Optional[str] = None

    @property
    def public_line(self) -> str:
        """The session key as an OpenSSH public key line: what the operator's grant names."""
        line = self.key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
        return line.decode()

    @property
    def public_blob(self) -> bytes:
        return key_blob(self.public_line)

    def sign(self, message: bytes) -> str:
        return sign_with(self.key, self.public_blob, message)


def make_grant(signer: Signer, operator: str, session_key: str, console: str, lifetime: float = GRANT_LIFETIME) -> str:
    """A grant, signed by ``operator``'s ``signer``, for the session key line ``session_key`` of ``console``."""
    issued = time.time()
    claim = GrantClaim(
        operator=operator,
        key=fingerprint(key_blob(session_key)),
        console=console,
        issued=issued,
        expires=issued + min(lifetime, MAX_GRANT_LIFETIME),
        nonce=secrets.token_hex(16),
    )
    message = canonical(claim.model_dump())
    wire = {"grant": claim.model_dump(), "signature": signer.sign(message)}
    return base64.urlsafe_b64encode(canonical(wire)).decode()


def parse_grant(grant: str) -> Tuple[GrantClaim, bytes, str]:
    """(claim, the signed message, the armored signature) of a grant string; SignatureError when malformed."""
    try:
        wire = json.loads(base64.urlsafe_b64decode(grant.encode()))
        claim = GrantClaim.model_validate(wire["grant"])
        signature = wire["signature"]
    except ValidationError as error:
        raise SignatureError(describe_validation_error(error, "grant")) from None
    except (ValueError, KeyError, TypeError):
        raise SignatureError("not a console grant: make one with python -m norfab_hermes.web grant") from None
    if not isinstance(signature, str):
        raise SignatureError("not a console grant: its signature is not an armored SSH signature")
    return claim, canonical(wire["grant"]), signature


def granting_key(grant: str, signing_blob: bytes, now: float) -> Tuple[str, bytes]:
    """(operator it names, the key blob that made it) of ``grant``, when it vouches for ``signing_blob`` at
    time ``now``; else SignatureError. Whether that key is the operator's is the caller's check."""
    claim, message, signature = parse_grant(grant)
    blob = verify(message, signature)
    if claim.key != fingerprint(signing_blob):
        raise SignatureError(f"it vouches for session key {claim.key}, not {fingerprint(signing_blob)} that signed")
    if claim.expires - claim.issued > MAX_GRANT_LIFETIME:
        raise SignatureError(f"valid for more than {MAX_GRANT_LIFETIME / 3600:.0f}h")
    if claim.expires <= now:
        raise SignatureError(f"expired {now - claim.expires:.0f}s ago; sign in to the console again")
    return claim.operator, blob
