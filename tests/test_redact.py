"""Secrets in what tools return are masked; the evidence around them is kept."""

from norfab_hermes.redact import redact, scrub


def test_device_configuration_secrets_are_masked():
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


def test_ordinary_output_is_left_alone():
    text = "1790 BGP community entries using 180118 bytes of memory\n match community 500"
    assert scrub(text) == text


def test_known_secret_values_are_masked_anywhere():
    assert scrub("Bearer sk-abcdef123456 sent", ["sk-abcdef123456"]) == "Bearer *** sent"


def test_secret_named_keys_are_masked_but_pointers_to_them_are_not():
    data = {"model": {"api_key": "sk-x", "api_key_env": "OPENROUTER_API_KEY"}, "hosts": [{"password": "nornir"}]}
    assert redact(data) == {"model": {"api_key": "***", "api_key_env": "OPENROUTER_API_KEY"}, "hosts": [{"password": "***"}]}
