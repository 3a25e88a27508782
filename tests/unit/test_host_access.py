"""What an agent definition may ask of the worker host: secrets, native Hermes settings, host tools."""

import pytest

from norfab_hermes.safety import host_access


@pytest.mark.parametrize(
    "name",
    ["api_key", "apiKey", "API-KEY", "token", "bot_token", "secret", "client_secret", "password", "ssh.passphrase"]
    + ["private_key", "aws_access_key", "credentials", "key", "Bearer", "auth", "Authorization"],
)
def test_key_like_names_hold_secrets(name):
    """Key-like field names, in any case and with '-', '_' or '.', are secrets."""
    assert host_access.is_secret_name(name)


@pytest.mark.parametrize(
    "name", ["api_key_env", "key_env", "TOKEN_ENV", "keyboard", "monkey_business", "author", "model"]
)
def test_pointers_and_ordinary_names_are_not_secrets(name):
    """Names of environment variables (*_env) and words merely containing 'key' or 'auth' are not secrets."""
    assert not host_access.is_secret_name(name)


def test_secret_fields_are_found_at_any_depth():
    """secret_fields gives the dotted path of every filled key-like field, in lists too."""
    value = {
        "model": {"api_key": "sk-1", "api_key_env": "OPENAI_KEY"},
        "providers": [{"name": "a", "token": "t"}, {"token": ""}],
        "nested": {"deeper": {"password": None, "passphrase": "p"}},
    }
    assert list(host_access.secret_fields(value)) == ["model.api_key", "providers[0].token", "nested.deeper.passphrase"]


def test_a_secret_in_a_definition_is_refused_with_the_fix():
    """refuse_secrets names every secret field under its section and says to use an environment variable."""
    with pytest.raises(ValueError) as error:
        host_access.refuse_secrets({"model": {"api_key": "sk-1"}, "token": "t"}, "hermes")
    message = str(error.value)
    assert message.startswith("'hermes.model.api_key', 'hermes.token' would write a secret into the definition")
    assert "model.api_key_env: ENV_NAME" in message


def test_a_definition_without_secrets_passes():
    """A definition naming its key through *_env passes."""
    host_access.refuse_secrets({"model": {"api_key_env": "OPENAI_KEY", "default": "gpt"}}, "hermes")


@pytest.mark.parametrize(
    "setting", ["hooks", "quick_commands", "mcp_servers", "terminal", "browser", "platforms_extra"]
)
def test_native_settings_that_reach_the_host_are_refused(setting):
    """Top-level Hermes settings outside the allowed list are refused, naming the setting."""
    with pytest.raises(
        ValueError, match=rf"^native Hermes setting\(s\) '{setting}' cannot be set in an agent definition"
    ):
        host_access.refuse_host_settings({"model": {}, setting: {}})


@pytest.mark.parametrize("dotted", sorted(host_access.REFUSED_SETTINGS))
def test_refused_keys_inside_allowed_sections_are_named(dotted):
    """skills.inline_shell, skills.external_dirs and memory.provider are refused inside allowed sections."""
    section, key = dotted.split(".")
    with pytest.raises(ValueError, match=rf"^'hermes\.{dotted}' cannot be set in an agent definition: "):
        host_access.refuse_host_settings({section: {key: True}})


def test_allowed_native_settings_pass():
    """Model, agent loop, memory and skills settings pass."""
    host_access.refuse_host_settings({"model": {"default": "m"}, "agent": {"max_turns": 5}, "skills": {"disabled": []}})


def test_host_tools_are_every_tool_outside_the_profile():
    """Every offered tool that is not contained in the profile, nor one of the agent's NorFab tools, is a host tool."""
    offered = ["todo", "memory", "terminal", "read_file", "inspect_interfaces", "future_tool", "delegate_task"]
    assert host_access.host_tools(offered, own_tools=["inspect_interfaces"]) == ["future_tool", "read_file", "terminal"]


def test_only_contained_tools_are_never_host_tools():
    """The contained tools alone reach nothing of the host."""
    assert host_access.host_tools(list(host_access.CONTAINED_TOOLS)) == []
