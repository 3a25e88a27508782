"""Small JSON files of the change envelope under the instance root, written atomically; its times."""

import json
import logging
from pathlib import Path
from typing import Any

from ..files import write_file

log = logging.getLogger(__name__)


def load(path: Path, default: Any) -> Any:
    """What ``path`` holds; ``default`` when it is missing or unreadable (logged: state was lost)."""
    if not path.exists():
        return default
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as error:
        log.error(f"Change state {path} could not be read, starting from nothing: {error}")
        return default


def save(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_file(path, json.dumps(data, indent=1, sort_keys=True))
