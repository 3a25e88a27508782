"""
Files the worker writes under its instance root, written atomically so that a
crash never leaves half a file behind, and readable by the worker's own user
alone: profiles, records, evidence, memory and history hold device output and
what operators decided.
"""

import os
from pathlib import Path
from typing import Any, Dict

import yaml

PRIVATE_UMASK, PRIVATE_DIR, PRIVATE_FILE = 0o077, 0o700, 0o600


def make_private(root: Path) -> None:
    """Everything this process creates from now on is its user's alone (Hermes' files included), and
    what an earlier version left under ``root`` is made so too."""
    os.umask(PRIVATE_UMASK)
    if not root.exists():
        return
    for path in (root, *root.rglob("*")):
        if path.is_symlink():
            continue
        mode = PRIVATE_DIR if path.is_dir() else PRIVATE_FILE
        if path.stat().st_mode & 0o777 != mode:
            os.chmod(path, mode)


def write_file(path: Path, text: str, mode: int = PRIVATE_FILE) -> None:
    """Write atomically so a crash never leaves a half-written profile file."""
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.chmod(tmp, mode)
    os.replace(tmp, path)


def write_config(path: Path, config: Dict[str, Any]) -> None:
    write_file(path, yaml.safe_dump(config, sort_keys=False))
