"""
Files the worker writes under its instance root, written atomically so that a
crash never leaves half a file behind.
"""

import os
from pathlib import Path
from typing import Any, Dict

import yaml


def write_file(path: Path, text: str, mode: int = 0o644) -> None:
    """Write atomically so a crash never leaves a half-written profile file."""
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.chmod(tmp, mode)
    os.replace(tmp, path)


def write_config(path: Path, config: Dict[str, Any]) -> None:
    write_file(path, yaml.safe_dump(config, sort_keys=False))
