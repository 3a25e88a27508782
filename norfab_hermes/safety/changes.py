"""
What a change must say before it runs, and what a check must show after it.

A change names its devices exactly (``FB`` or ``FL``, no patterns): those
are the devices it locks, previews and asks approval for. Definitions refer
to a change call's arguments as ``${name}`` (workflow files, rollback
commands, verification expectations); the worker puts in the values the
call's guards already checked, never template code. A change is approved by
its digest: tool, task arguments, targets and preview, hashed.

Pure data and checks: imported by ``models`` and by the worker's tools.
"""

import hashlib
import json
import re
from typing import Any, Dict, List, Set

# host filters of NorFab's nornir-style tasks
HOST_FILTERS = {"FO", "FB", "FH", "FC", "FR", "FG", "FP", "FL", "FM", "FX", "FN", "hosts"}
EXACT_FILTERS = ("FB", "FL")  # the filters a change may name its devices with
DEVICE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:/-]{0,127}$")
PLACEHOLDER_RE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
CONTROL_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2066-\u2069]")
DIGEST_CHARS = 16


def change_devices(kwargs: Dict[str, Any]) -> List[str]:
    """The devices a change's task arguments name; ValueError when they are not named exactly."""
    patterns = sorted(k for k in kwargs if k in HOST_FILTERS and k not in EXACT_FILTERS)
    if patterns:
        raise ValueError(
            f"a change names its devices with FB or FL only; {', '.join(patterns)} could pick devices "
            "the approval does not show"
        )
    names: List[str] = []
    for key in EXACT_FILTERS:
        value = kwargs.get(key)
        items = value.split(",") if isinstance(value, str) else value if isinstance(value, list) else []
        names += [str(item).strip() for item in items]
    for name in names:
        if not DEVICE_RE.fullmatch(name):
            raise ValueError(
                f"device '{name}' must be named exactly (letters, digits, _ . : / -; no *, ? or [): "
                "a change locks, previews and is approved for named devices"
            )
    return sorted(set(names))


def placeholders(value: Any) -> Set[str]:
    """The ``${name}`` references in every string of a JSON-like value."""
    if isinstance(value, str):
        return set(PLACEHOLDER_RE.findall(value))
    if isinstance(value, dict):
        return set().union(*(placeholders(v) for v in value.values())) if value else set()
    if isinstance(value, list):
        return set().union(*(placeholders(v) for v in value)) if value else set()
    return set()


def substitute(value: Any, variables: Dict[str, Any], escape: bool = False) -> Any:
    """``value`` with every ``${name}`` replaced by that variable; a string that is only a
    reference takes the value as it is (a list stays a list). ``escape`` quotes values for
    regular expressions. KeyError names a reference without a value."""
    if isinstance(value, dict):
        return {k: substitute(v, variables, escape) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute(v, variables, escape) for v in value]
    if not isinstance(value, str):
        return value
    whole = PLACEHOLDER_RE.fullmatch(value)
    if whole and not escape:
        return variables[whole.group(1)]

    def one(match: "re.Match[str]") -> str:
        text = str(variables[match.group(1)])
        return re.escape(text) if escape else text

    return PLACEHOLDER_RE.sub(one, value)


def unmet(
    text: str, contains: List[str], absent: List[str], matches: List[str], variables: Dict[str, Any]
) -> List[str]:
    """What ``text`` fails to show of a check's expectations (empty: the check passed)."""
    problems = []
    for wanted in substitute(contains, variables):
        if wanted not in text:
            problems.append(f"does not show '{wanted}'")
    for unwanted in substitute(absent, variables):
        if unwanted in text:
            problems.append(f"still shows '{unwanted}'")
    for pattern in substitute(matches, variables, escape=True):
        if not re.search(pattern, text, re.M):
            problems.append(f"shows no line matching '{pattern}'")
    return problems


def clean_text(text: str, limit: int) -> str:
    """Device text for an operator's screen: no control or direction characters, at most ``limit`` characters."""
    text = CONTROL_RE.sub("", str(text).replace("\r\n", "\n"))
    if len(text) > limit:
        return text[:limit] + f"\n[... {len(text) - limit} more characters]"
    return text


def change_digest(change: Dict[str, Any]) -> str:
    """The digest an approval records: tool, task arguments, targets and preview, hashed."""
    blob = json.dumps(change, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:DIGEST_CHARS]
