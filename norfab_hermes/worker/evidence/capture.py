"""
The pieces of evidence in one tool result: a NorFab reply split by the
worker that answered, the device and the command that printed each output
(a nornir result is keyed by host, then command), or the whole result of
any other task under its ``service.task``. Each piece is redacted exactly as
the model's view of the result is, so an artifact holds the text the model
was given before any cut. Pure functions.
"""

import hashlib
import json
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Optional

from ...safety.redact import redact


@dataclass(frozen=True)
class Piece:
    """One output kept as an artifact: where it came from and its (redacted) text."""

    worker: Optional[str]
    device: Optional[str]
    command: str
    text: str
    redacted: bool  # secrets were masked


def as_text(value: Any) -> str:
    """Device output as printed; anything else as stable, readable JSON."""
    return value if isinstance(value, str) else json.dumps(value, indent=2, sort_keys=True, default=str)


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _piece(worker: Optional[str], device: Optional[str], command: str, raw: Any, secrets: List[str]) -> Piece:
    kept = redact(raw, secrets)
    return Piece(worker, device, command, as_text(kept), kept != raw)


def pieces(service: str, task: str, reply: Any, secrets: Iterable[str] = ()) -> List[Piece]:
    """The outputs of a NorFab reply ``{worker: {result, ...}}`` (failed workers' results too)."""
    secrets = list(secrets)
    found: List[Piece] = []
    for worker, answer in (reply or {}).items():
        result = answer.get("result") if isinstance(answer, dict) else None
        if result is None:
            continue
        if service == "nornir" and isinstance(result, dict) and all(isinstance(v, dict) for v in result.values()):
            for device, outputs in result.items():
                for command, output in outputs.items():
                    found.append(_piece(worker, device, str(command), output, secrets))
        else:
            found.append(_piece(worker, None, f"{service}.{task}", result, secrets))
    return found


def answer_piece(worker: str, agent: str, response: str, secrets: Iterable[str] = ()) -> Piece:
    """A delegate's answer: what the asked agent on ``worker`` replied."""
    return _piece(worker, None, f"hermes.invoke {agent}@{worker}", response, list(secrets))


def quoted(text: str, evidence: Dict[str, str]) -> Optional[str]:
    """The id of the first artifact whose text holds ``text`` (whitespace runs aside), or None."""
    wanted = " ".join(text.split())
    if not wanted:
        return None
    for artifact_id, body in evidence.items():
        if any(wanted in " ".join(line.split()) for line in body.splitlines()):
            return artifact_id
    return None
