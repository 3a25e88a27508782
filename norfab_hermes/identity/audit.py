"""
The audit log checked again, on the worker (``verify_audit``) and offline on
an exported file (``python -m norfab_hermes.identity verify-audit``): each
entry's hash over its link and fields, the links between entries, and the
operator's signature a signed request's entry keeps (the claim still
verifies under the signature, the signing key is the fingerprint the entry
names, and, when the operators' keys are given, that key belongs to the
operator the entry names).
"""

import hashlib
import json
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Protocol, Tuple

from ..models import parse_operators
from .grant import granting_key
from .signatures import SignatureError, fingerprint, key_blob, verify


def entry_hash(
    prev: str, seq: int, time: str, worker: str, kind: str, agent: Any, run_id: Any, actor: Any, data: str
) -> str:
    """The hash of an entry: its link to the one before and every field, unambiguously encoded."""
    fields = [seq, time, worker, kind, agent, run_id, actor, data]
    return hashlib.sha256(f"{prev}\n{json.dumps(fields)}".encode()).hexdigest()


def canonical(data: Dict[str, Any]) -> str:
    """An entry's data as its hash covers it."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), default=str)


def signature_problem(seq: int, data: Dict[str, Any], keys: Optional[Dict[str, str]] = None) -> Optional[str]:
    """Why entry ``seq``'s kept signature does not prove its operator, or None (also for an unsigned entry).

    Args:
        seq: the entry's sequence number, for the message.
        data: the entry's data; a signed request's entry holds ``signed``.
        keys: key fingerprint to operator name; None checks the signature alone.
    """
    signed = data.get("signed")
    if signed is None:
        return None
    try:
        blob = verify(str(signed["claim"]).encode(), str(signed["signature"]))
    except (SignatureError, KeyError, TypeError) as error:
        return f"entry {seq}: the operator's signature does not verify ({error})"
    claim = json.loads(str(signed["claim"]))
    if claim.get("grant") is not None:  # a console's request: the session key signed, the operator's key granted it
        try:
            _, blob = granting_key(claim["grant"], blob, float(claim["issued"]))
        except (SignatureError, KeyError, ValueError) as error:
            return f"entry {seq}: the operator's console grant does not verify ({error})"
    key = fingerprint(blob)
    if key != signed.get("fingerprint"):
        return f"entry {seq}: signed by key {key}, not the {signed.get('fingerprint')} it names"
    if keys is not None and keys.get(key) != signed.get("operator"):
        owner = keys.get(key)
        held = f"operator '{owner}'" if owner else "no operator"
        return f"entry {seq}: names operator '{signed.get('operator')}' but its key {key} belongs to {held}"
    return None


class Columns(Protocol):
    """An entry's columns read by name: a dict of an export's line, or a row of the records (either backend's)."""

    def __getitem__(self, name: str, /) -> Any: ...


def entry_problems(
    entry: Columns, text: str, expected: int, prev: str, keys: Optional[Dict[str, str]] = None
) -> List[str]:
    """What is wrong with one entry of a chain (a gap before it, its link, its hash, its signature).

    Args:
        entry: the entry's columns (seq, time, worker, kind, agent, run_id, actor, prev, hash).
        text: its data as stored (canonical JSON).
        expected: the sequence number the chain expects next.
        prev: the hash of the entry before it.
        keys: key fingerprint to operator name, for the signatures; None checks them alone.
    """
    problems = []
    seq = entry["seq"]
    if seq != expected:
        problems.append(f"entries {expected} to {seq - 1} are missing (deleted)")
    elif entry["prev"] != prev:
        problems.append(f"entry {seq} does not follow entry {seq - 1}: the link to it was changed")
    fields = (entry["time"], entry["worker"], entry["kind"], entry["agent"], entry["run_id"], entry["actor"], text)
    if entry_hash(entry["prev"], seq, *fields) != entry["hash"]:
        problems.append(f"entry {seq} was edited: its hash does not match its content")
    if '"signed"' in text and (problem := signature_problem(seq, json.loads(text), keys)):
        problems.append(problem)
    return problems


def operator_keys(data: Any, where: str = "operators file") -> Dict[str, str]:
    """Fingerprint to operator name, from operators as the worker reads them (a mapping, or an inventory's ``operators``)."""
    if isinstance(data, dict) and isinstance(data.get("operators"), dict):
        data = data["operators"]
    return {fingerprint(key_blob(line)): name for name, o in parse_operators(data, where).items() for line in o.keys}


def verify_export(lines: Iterable[str], keys: Optional[Dict[str, str]] = None) -> Tuple[int, List[str]]:
    """Check an exported audit log (``hermes audit export``: one entry a line); (entries, problems).

    The file holds one chain per record, one after the other: a chain ends where the sequence
    number stops growing. The first entry of each chain links to entries not in the file (pruned
    ones), so its link is taken as it is; every other link, every hash and every kept signature is
    checked. Export a log whole (no filters): a filtered one has gaps.
    """
    problems: List[str] = []
    count, expected, prev = 0, 0, ""
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
            seq, text = int(entry["seq"]), canonical(entry["data"])
        except (ValueError, KeyError, TypeError) as error:
            problems.append(f"line {number}: not an audit entry ({type(error).__name__}: {error})")
            continue
        if seq < expected:  # the next record's chain
            expected = 0
        if expected == 0:
            expected, prev = seq, entry.get("prev")
        try:
            problems += entry_problems(entry, text, expected, prev, keys)
        except KeyError as error:
            problems.append(f"line {number}: entry {seq} lacks the field {error}")
        prev, expected, count = entry.get("hash"), seq + 1, count + 1
    return count, problems


def verify_export_file(path: Path, operators: Optional[Path] = None) -> Tuple[int, List[str]]:
    """``verify_export`` of a file, against the keys of an operators YAML file when given."""
    import yaml

    keys = None
    if operators is not None:
        keys = operator_keys(
            yaml.safe_load(Path(operators).read_text(encoding="utf-8")), f"operators file '{operators}'"
        )
    with open(path, encoding="utf-8") as lines:
        return verify_export(lines, keys)
