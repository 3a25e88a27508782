"""Secrets in what tools return are masked; every other character of the evidence is kept."""

import json
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from norfab_hermes.safety.redact import MASK, redact, scrub

# words a secret stands after; a line without any of them is never a secret line
KEYWORDS = re.compile(r"password|passwd|secret|key|token|community|credential|snmp|tacacs|radius|bearer|\$\d", re.I)
SECRET = st.text("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789$./", min_size=6, max_size=40).filter(
    lambda s: not KEYWORDS.search(s) and s not in MASK
)
PLAIN_LINE = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\n\r"), max_size=120).filter(
    lambda s: not KEYWORDS.search(s)
)
SUFFIX = st.sampled_from(["", " RO", " RW 10", " level 15", "  ! note"])
# forms operators meet, each with {} where the secret stands
FORMS = [
    "enable secret 5 {}",
    "username admin privilege 15 password 0 {}",
    "username netops secret 9 {}",
    "snmp-server community {}",
    "snmp-server host 10.0.0.1 version 2c {}",
    "tacacs-server key 7 {}",
    " key-string 7 {}",
    " pre-shared-key 0 {}",
    "crypto isakmp key {} address 0.0.0.0",
    " ip ospf message-digest-key 1 md5 7 {}",
    "password: {}",
    "  password: '{}'",
    '"password": "{}"',
    'api_key = "{}"',
    "token={}",
    "Authorization: Bearer {}",
]
LINE_FORM = " key 7 {}"
FORMS.append(LINE_FORM)


def test_device_configuration_secrets_are_masked():
    """Passwords, enable secrets, SNMP communities and key strings in a device configuration are masked."""
    config = "\n".join(
        [
            "enable secret 9 $9$nhEmQVczB7dqsO$X.HsgL6x1il0RxkOSSvyQYwucySCt7qFm4v7pqCxkKM",
            "username netops privilege 15 password 7 0822455D0A16",
            "snmp-server community s3cr3tRO RO",
            " key-string 7 045802150C2E",
        ]
    )
    masked = scrub(config)
    for secret in ("$9$nhEmQVczB7", "0822455D0A16", "s3cr3tRO", "045802150C2E"):
        assert secret not in masked
    assert "username netops privilege 15 password 7 ***" in masked
    assert "snmp-server community *** RO" in masked


def test_finding_4_the_words_after_a_secret_survive_in_a_json_tool_result():
    """The line break and words after a masked secret survive in a JSON tool result (finding 4 ate them)."""
    output = "enable secret 5 $1$mERr$hx5rVt7rPNoS4wqbXKX7m0\nusername admin privilege 15 password 0 Adm1nPw\nsnmp-server community C0mmun1ty RO"
    text = json.dumps(redact({"r1": {"show run": output}}))
    assert json.loads(text) == {
        "r1": {
            "show run": "enable secret 5 ***\nusername admin privilege 15 password 0 ***\nsnmp-server community *** RO"
        }
    }
    for secret in ("hx5rVt7rPNoS", "Adm1nPw", "C0mmun1ty"):
        assert secret not in text


def test_ordinary_output_is_left_alone():
    """Output that only mentions communities, tokens or keys as words is returned unchanged."""
    text = (
        "1790 BGP community entries using 180118 bytes of memory\n match community 500\n"
        "service password-encryption\nneighbor 10.0.0.2 send-community both\ninput_tokens: 45\n"
        "key chain OSPF\n key 1\n set community 65000:100 additive"
    )
    assert scrub(text) == text


def test_known_secret_values_are_masked_anywhere():
    """A known secret value is masked wherever it stands in text."""
    assert (
        scrub("Incorrect API key provided: sk-abcdef123456 sent", ["sk-abcdef123456"])
        == "Incorrect API key provided: *** sent"
    )


def test_secret_named_keys_are_masked_but_pointers_to_them_are_not():
    """Values under secret-named keys are masked; *_env pointers to them are kept."""
    data = {"model": {"api_key": "sk-x", "api_key_env": "OPENROUTER_API_KEY"}, "hosts": [{"password": "nornir"}]}
    assert redact(data) == {
        "model": {"api_key": "***", "api_key_env": "OPENROUTER_API_KEY"},
        "hosts": [{"password": "***"}],
    }


@settings(max_examples=300, deadline=None)
@given(st.lists(PLAIN_LINE, max_size=8))
def test_lines_without_a_secret_are_never_changed(lines):
    """Any text without a secret keyword comes back unchanged."""
    text = "\n".join(lines)
    assert scrub(text) == text


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(FORMS), SECRET, SUFFIX, st.lists(PLAIN_LINE, max_size=3), st.lists(PLAIN_LINE, max_size=3))
def test_only_the_secret_value_is_replaced(form, secret, suffix, before, after):
    """In every secret form only the value is replaced by the mask; the rest of the line and the text stay."""
    if form == LINE_FORM:
        suffix = ""  # "key 7 <key>" is a secret only as a whole line (not "key chain NAME")
    line = form.format(secret) + suffix
    text = "\n".join([*before, line, *after])
    assert scrub(text) == "\n".join([*before, form.format(MASK) + suffix, *after])


@settings(max_examples=200, deadline=None)
@given(
    st.recursive(
        st.one_of(st.none(), st.integers(), st.sampled_from(FORMS).map(lambda f: f.format("Xy9secret")), PLAIN_LINE),
        lambda inner: st.one_of(
            st.lists(inner, max_size=4),
            st.dictionaries(st.sampled_from(["output", "password", "r1", "community"]), inner, max_size=4),
        ),
        max_leaves=12,
    )
)
def test_a_redacted_tool_result_is_valid_json_without_the_secret(data):
    """Any redacted tool result encodes to valid JSON that no longer holds the secret."""
    text = json.dumps(redact(data))
    json.loads(text)
    assert "Xy9secret" not in text
