"""
Secrets out of everything the hermes service hands back: inventory, agent
config, tool results. Keys that name secrets are masked whatever their value;
text is scrubbed of the values the worker knows to be secret.
"""

import re
from typing import Any, Iterable

MASK = "***"
SECRET_KEY_RE = re.compile(r"(api[_-]?key|token|secret|password|passwd|credential|private[_-]?key)$", re.I)
# names of variables that only point at a secret are safe to show
SAFE_KEYS = {"api_key_env", "key_env"}
# secrets in device configuration output: "password 7 0822455D", "enable secret 9 $9$...",
# "snmp-server community public RO", "key-string 7 ...", "pre-shared-key 0 ..."
SECRET_LINE_RE = re.compile(
    r"(\b(?:password|secret|snmp-server community|key-string|pre-shared-key)\s+(?:[0-9]\s+)?)(?!\s)\S+",
    re.I,
)


def redact(value: Any) -> Any:
    """A copy of ``value`` with every secret-named key masked."""
    if isinstance(value, dict):
        return {
            key: MASK
            if isinstance(key, str) and key not in SAFE_KEYS and SECRET_KEY_RE.search(key) and value[key]
            else redact(item)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [redact(item) for item in value]
    return value


def scrub(text: str, secrets: Iterable[str] = ()) -> str:
    """Mask known secret values and secret-looking config lines in free text."""
    for secret in secrets:
        text = text.replace(secret, MASK)
    return SECRET_LINE_RE.sub(lambda m: m.group(1) + MASK, text)
