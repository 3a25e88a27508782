"""
A new operator key: an unencrypted Ed25519 OpenSSH key pair, as
``ssh-keygen -t ed25519 -N ""`` writes it, for labs and demos that make
their operators' keys themselves (a real operator uses their own key).
"""

import os
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519


def new_key(path: Path, comment: str) -> str:
    """Write a key pair at ``path`` (private, mode 600) and ``path.pub``, unless they exist; the public key line."""
    path, public = Path(path), Path(f"{path}.pub")
    if not (path.is_file() and public.is_file()):
        path.parent.mkdir(parents=True, exist_ok=True)
        key = ed25519.Ed25519PrivateKey.generate()
        private = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, serialization.NoEncryption()
        )
        line = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "wb") as file:
            file.write(private)
        public.write_text(f"{line.decode()} {comment}\n")
    return public.read_text().strip()
