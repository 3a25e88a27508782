"""
Secrets out of everything the hermes service hands on: tool results, results,
events, session transcripts and logs.

Two tools, both keeping every character that is not a secret:

* :func:`redact` walks structured data (dicts, lists, strings): values under
  secret-named keys are masked, strings are scrubbed. A tool result is
  redacted as data and only then encoded as JSON, so a mask can never break
  the encoding or swallow an escaped line break.
* :func:`scrub` masks secrets in text as a device or a program printed it,
  line by line: only the secret value is replaced, and a line without a
  secret is returned unchanged.
"""

import re
from typing import Any, Iterable, List, Pattern

MASK = "***"
SECRET_KEY_RE = re.compile(
    r"(api[_-]?key|token|secret|password|passwd|credential|private[_-]?key|community|pre[_-]?shared[_-]?key)$", re.I
)
# names of variables that only point at a secret are safe to show
SAFE_KEYS = {"api_key_env", "key_env"}

# A value: a quoted string (masked inside its quotes) or one word. [ \t]
# rather than \s everywhere: a pattern never reaches into the next line.
_VALUE = r"""(?P<value>"(?:[^"\\\n]|\\.)*"|'[^'\n]*'|[^\s"',;{}\[\]]+)"""
_TYPE = r"(?:[0-9]{1,2}[ \t]+)?"  # IOS encryption type before a secret: "password 7 ..."
_KEY_WORDS = (
    r"password|passwd|secret|key-string|pre-shared-key|authentication-key|encrypted-password"
    r"|auth-password|priv-password|community-string"
)

SECRET_PATTERNS: List[Pattern[str]] = [
    # CLI: "username u password 0 pw", "enable secret 9 $9$...", "key-string 7 ...";
    # not "service password-encryption" or "password encryption aes"
    re.compile(rf"(?<![\w-])(?:{_KEY_WORDS})(?![\w-])[ \t]+(?!encryption\b){_TYPE}{_VALUE}", re.I),
    # SNMP community strings wherever they stand on an snmp line:
    # "snmp-server community c RO", "snmp-server host 10.0.0.1 version 2c c"
    re.compile(rf"\bsnmp[\w-]*\b[^\n]*?(?<![\w-])community[ \t]+{_TYPE}{_VALUE}", re.I),
    re.compile(
        rf"\bsnmp-server[ \t]+host[ \t]+\S+(?:[ \t]+(?:informs|traps))?(?:[ \t]+version[ \t]+(?:1|2c))[ \t]+{_VALUE}",
        re.I,
    ),
    # Junos snmp stanza "community public {"
    re.compile(rf"^[ \t]*community[ \t]+{_VALUE}[ \t]*\{{[ \t]*$", re.I | re.M),
    # server keys: "tacacs-server key 7 k", "radius-server host h key k",
    # "crypto isakmp key k address 0.0.0.0", a bare "key 7 k"
    # line in a server block (not "key 1" of a key chain), "message-digest-key 1 md5 7 k"
    re.compile(rf"\b(?:tacacs|radius|isakmp)[\w-]*\b[^\n]*?(?<![\w-])key[ \t]+{_TYPE}{_VALUE}", re.I),
    re.compile(rf"^[ \t]*key[ \t]+[0-9]{{1,2}}[ \t]+{_VALUE}[ \t]*$", re.I | re.M),
    re.compile(rf"\bmessage-digest-key[ \t]+[0-9]+[ \t]+md5[ \t]+{_TYPE}{_VALUE}", re.I),
    # key-value forms of YAML, JSON, INI and CLI flags: password: x, "api_key": "x", token=x
    re.compile(
        r"""(?<![\w-])["']?[\w-]*(?:password|passwd|secret|token|api[_-]?key|private[_-]?key|community|credential)"""
        rf"""["']?[ \t]*[:=][ \t]*{_VALUE}""",
        re.I,
    ),
    # crypt hashes ($1$, $5$, $6$, $8$, $9$, $14$ ...) and bearer tokens anywhere
    re.compile(r"(?P<value>\$[0-9]{1,2}\$[^\s\"',;]+)"),
    re.compile(rf"\bBearer[ \t]+{_VALUE}"),
]


def _mask_value(match: "re.Match[str]") -> str:
    value = match.group("value")
    start, end = match.span("value")
    if value[:1] in "\"'" and len(value) >= 2 and value[-1] == value[0]:
        start, end = start + 1, end - 1  # keep the quotes
    if start >= end:
        return match.group(0)  # an empty value is no secret
    offset = match.start()
    text = match.group(0)
    return text[: start - offset] + MASK + text[end - offset :]


def scrub(text: str, secrets: Iterable[str] = ()) -> str:
    """Mask known secret values and secrets in configuration-like text."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, MASK)
    for pattern in SECRET_PATTERNS:
        text = pattern.sub(_mask_value, text)
    return text


def redact(value: Any, secrets: Iterable[str] = ()) -> Any:
    """A copy of ``value`` with secret-named keys masked and every string scrubbed."""
    secrets = list(secrets)
    if isinstance(value, dict):
        return {
            key: MASK
            if isinstance(key, str) and key not in SAFE_KEYS and SECRET_KEY_RE.search(key) and value[key]
            else redact(item, secrets)
            for key, item in value.items()
        }
    if isinstance(value, (list, tuple)):
        return [redact(item, secrets) for item in value]
    if isinstance(value, str):
        return scrub(value, secrets)
    return value
