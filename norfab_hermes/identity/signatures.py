"""
OpenSSH signatures (the SSHSIG format of ``ssh-keygen -Y sign``) of
operators' requests.

Verifying is in-process: Ed25519 and RSA through the ``sshsig`` library,
ECDSA (which it lacks) with ``cryptography`` over the same parsed
signature. Signing is in-process for a key file (Ed25519 or ECDSA) and goes
through ``ssh-keygen -Y sign`` for a key held by ssh-agent. Tests check
both directions against ``ssh-keygen`` itself.
"""

import base64
import hashlib
import io
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Protocol, Tuple

from cryptography.exceptions import InvalidSignature as CryptoInvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature, encode_dss_signature
from sshsig import InvalidSignature, PublicKey, check_signature
from sshsig.binary_io import SshReader, SshWriter
from sshsig.sshsig import SshsigSignature, SshsigWrapper, ssh_enarmor_sshsig

NAMESPACE = "norfab-hermes"  # a signature for git or ssh logins never passes for a request
HASH = b"sha512"
CURVES = {
    b"nistp256": (ec.SECP256R1(), hashes.SHA256()),
    b"nistp384": (ec.SECP384R1(), hashes.SHA384()),
    b"nistp521": (ec.SECP521R1(), hashes.SHA512()),
}
AGENT_TIMEOUT = 10.0


class SignatureError(Exception):
    """A signature that does not verify, or a key that cannot sign; the text says which and why."""


def key_blob(public_key_line: str) -> bytes:
    """The wire encoding of an OpenSSH public key line (``ssh-ed25519 AAAA... comment``)."""
    parts = public_key_line.split()
    if len(parts) < 2:
        raise SignatureError(f"'{public_key_line[:40]}' is not an OpenSSH public key line (type, base64, comment)")
    try:
        return base64.b64decode(parts[1], validate=True)
    except ValueError:
        raise SignatureError(f"'{public_key_line[:40]}' is not an OpenSSH public key line: bad base64") from None


def fingerprint(blob: bytes) -> str:
    """``SHA256:...`` as ``ssh-keygen -l`` prints it."""
    return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")


def _encode(*strings: bytes) -> bytes:
    pkt = SshWriter(io.BytesIO())
    for value in strings:
        pkt.write_string(value)
    return pkt.output_fh.getvalue()


def _mpint(value: int) -> bytes:
    # RFC 4251 mpint of a positive number: a leading zero byte when the top bit is set
    return value.to_bytes((value.bit_length() + 8) // 8, "big")


def _to_be_signed(message: bytes) -> bytes:
    return SshsigWrapper(namespace=NAMESPACE.encode(), hash_algo=HASH, hash=hashlib.sha512(message).digest()).to_bytes()


def _armor(public_blob: bytes, signature_blob: bytes) -> str:
    pkt = SshWriter(io.BytesIO())
    pkt.write(b"SSHSIG")
    pkt.write_uint32(SshsigSignature.VERSION)
    for value in (public_blob, NAMESPACE.encode(), b"", HASH, signature_blob):
        pkt.write_string(value)
    return ssh_enarmor_sshsig(pkt.output_fh.getvalue())


def verify(message: bytes, armored: str) -> bytes:
    """The public key blob that made ``armored`` over ``message`` in our namespace; SignatureError if none did."""
    try:
        outer = SshsigSignature.from_armored(armored)
    except (ValueError, NotImplementedError) as error:
        raise SignatureError(f"not an SSH signature ({error})") from None
    if outer.namespace != NAMESPACE.encode() or outer.hash_algo not in (b"sha512", b"sha256"):
        raise SignatureError(f"signed for namespace '{outer.namespace.decode(errors='replace')}', not '{NAMESPACE}'")
    algo = SshReader.from_bytes(outer.public_key).read_string()
    if algo.startswith(b"ecdsa-sha2-"):
        _verify_ecdsa(outer, message)
        return outer.public_key
    try:
        key: PublicKey = check_signature(message, armored, NAMESPACE)
    except (InvalidSignature, NotImplementedError, ValueError) as error:
        raise SignatureError(f"the signature does not match the request ({error})") from None
    return key_blob(key.openssh_str())


def _verify_ecdsa(outer: SshsigSignature, message: bytes) -> None:
    pub = SshReader.from_bytes(outer.public_key)
    pub.read_string()
    curve_name, point = pub.read_string(), pub.read_string()
    if curve_name not in CURVES:
        raise SignatureError(f"ECDSA curve {curve_name.decode(errors='replace')} is not supported")
    curve, digest = CURVES[curve_name]
    sig = SshReader.from_bytes(outer.signature)
    sig.read_string()
    inner = SshReader.from_bytes(sig.read_string())
    signature = encode_dss_signature(inner.read_mpint(), inner.read_mpint())
    try:
        key = ec.EllipticCurvePublicKey.from_encoded_point(curve, point)
        hashed = {b"sha512": hashlib.sha512, b"sha256": hashlib.sha256}[outer.hash_algo](message).digest()
        wrapped = SshsigWrapper(namespace=outer.namespace, hash_algo=outer.hash_algo, hash=hashed).to_bytes()
        key.verify(signature, wrapped, ec.ECDSA(digest))
    except (CryptoInvalidSignature, ValueError):
        raise SignatureError("the signature does not match the request (ECDSA)") from None


class Signer(Protocol):
    """Signs a message as one operator's key (``KeyFileSigner``, ``AgentSigner``, a console's session key)."""

    def sign(self, message: bytes) -> str: ...


@dataclass(frozen=True)
class KeyFileSigner:
    """Signs in-process with an unencrypted OpenSSH private key file (Ed25519 or ECDSA)."""

    path: Path
    key: object
    public_blob: bytes

    @classmethod
    def load(cls, path: Path) -> "KeyFileSigner":
        try:
            key = serialization.load_ssh_private_key(Path(path).expanduser().read_bytes(), password=None)
        except TypeError:
            raise SignatureError(
                f"key file '{path}' is protected by a passphrase: add the key to ssh-agent (ssh-add {path})"
            ) from None
        except (OSError, ValueError) as error:
            raise SignatureError(f"key file '{path}' could not be read as an OpenSSH private key: {error}") from None
        if not isinstance(key, (ed25519.Ed25519PrivateKey, ec.EllipticCurvePrivateKey)):
            raise SignatureError(f"key file '{path}' holds a {type(key).__name__}: use an Ed25519 or ECDSA key")
        line = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
        return cls(Path(path), key, key_blob(line.decode()))

    def sign(self, message: bytes) -> str:
        return sign_with(self.key, self.public_blob, message)


def sign_with(key: object, public_blob: bytes, message: bytes) -> str:
    """An armored SSHSIG signature of ``message`` by an in-process Ed25519 or ECDSA private key."""
    data = _to_be_signed(message)
    if isinstance(key, ed25519.Ed25519PrivateKey):
        signature = _encode(b"ssh-ed25519", key.sign(data))
    elif isinstance(key, ec.EllipticCurvePrivateKey):
        algo = SshReader.from_bytes(public_blob).read_string()
        _, digest = CURVES[b"nistp" + str(key.curve.key_size).encode()]
        r, s = decode_dss_signature(key.sign(data, ec.ECDSA(digest)))
        signature = _encode(algo, _encode(_mpint(r), _mpint(s)))
    else:
        raise SignatureError(f"a {type(key).__name__} cannot sign here: use an Ed25519 or ECDSA key")
    return _armor(public_blob, signature)


@dataclass(frozen=True)
class AgentSigner:
    """Signs with a key ssh-agent holds, through ``ssh-keygen -Y sign`` (the private key never leaves the agent)."""

    public_key_file: Path
    public_blob: bytes

    def sign(self, message: bytes) -> str:
        done = subprocess.run(
            ["ssh-keygen", "-q", "-Y", "sign", "-n", NAMESPACE, "-f", str(self.public_key_file)],
            input=message,
            capture_output=True,
            timeout=AGENT_TIMEOUT,
        )
        if done.returncode != 0:
            raise SignatureError(f"ssh-agent did not sign: {done.stderr.decode(errors='replace').strip()}")
        return done.stdout.decode()


def agent_holds(public_blob: bytes) -> bool:
    """Whether the ssh-agent of ``SSH_AUTH_SOCK`` holds the private half of the key."""
    if not os.environ.get("SSH_AUTH_SOCK"):
        return False
    try:
        listed = subprocess.run(["ssh-add", "-L"], capture_output=True, timeout=AGENT_TIMEOUT, text=True)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return any(key_blob(line) == public_blob for line in listed.stdout.splitlines() if len(line.split()) >= 2)


def signer_for(key: Path) -> Tuple[Signer, str]:
    """The signer for the key at ``key`` (its ``.pub`` beside it): ssh-agent first, then the file; and which."""
    key = Path(key).expanduser()
    public = key if key.suffix == ".pub" else key.with_name(key.name + ".pub")
    blob: Optional[bytes] = key_blob(public.read_text()) if public.is_file() else None
    if blob is not None and agent_holds(blob):
        return AgentSigner(public, blob), "ssh-agent"
    if key.suffix == ".pub":
        raise SignatureError(f"ssh-agent does not hold the key of '{key}': ssh-add it, or name the private key file")
    return KeyFileSigner.load(key), "key file"
