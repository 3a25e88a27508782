"""Definitions refuse bad input with one line naming the agent, the field and the fix."""

import pytest
from pydantic import ValidationError

from norfab_hermes.errors import InventoryError
from norfab_hermes.models import (
    AgentDefinition,
    AgentReference,
    Lineage,
    check_agent_name,
    parse_agent,
    parse_inventory,
)

CLI = {"service": "nornir", "task": "cli"}


def refusal(name: str, data: object) -> str:
    """The one-line message parse_agent refuses ``data`` with."""
    with pytest.raises(InventoryError) as error:
        parse_agent(name, data)
    message = str(error.value)
    assert "\n" not in message, message
    return message


@pytest.mark.parametrize(
    "data, where, fix",
    [
        (
            {"instructions": "x", "colour": "red"},
            "unknown key 'colour'",
            "(allowed: approval_timeout, approvals_required, approvers, changes,",
        ),
        ({"description": "x"}, "field 'instructions' is required", ""),
        ({"instructions": ""}, "field 'instructions'", "at least 1 character"),
        ({"instructions": "x", "run_timeout": 0}, "field 'run_timeout'", "greater than 0"),
        ({"instructions": "x", "max_delegation_depth": 9}, "field 'max_delegation_depth'", "less than or equal to 5"),
        ({"instructions": "x", "hermes": {"platforms": {}}}, "field 'hermes'", "'hermes.platforms' is managed by"),
        ({"instructions": "x", "hermes": {"model": "gpt"}}, "field 'hermes'", "'hermes.model' must be a mapping"),
        (
            {"instructions": "x", "hermes": {"model": {"api_key": "sk"}}},
            "field 'hermes'",
            "model.api_key_env: ENV_NAME",
        ),
        ({"instructions": "x", "hermes": {"hooks": {}}}, "field 'hermes'", "native Hermes setting(s) 'hooks'"),
        ({"instructions": "x", "tools": {"bad name": {"norfab": CLI}}}, "field 'tools'", "tool name 'bad name'"),
        (
            {"instructions": "x", "tools": {"t": {"norfab": {**CLI, "task": "run_shell_cmd"}}}},
            "field 'tools.t.norfab'",
            "task 'run_shell_cmd' cannot be a tool",
        ),
        (
            {"instructions": "x", "tools": {"t": {"norfab": {"service": "hermes", "task": "invoke"}}}},
            "field 'tools.t.norfab'",
            "service 'hermes' cannot be a tool",
        ),
        (
            {"instructions": "x", "tools": {"t": {"norfab": {**CLI, "kwargs": {"password": "p"}}}}},
            "field 'tools.t.norfab'",
            "'norfab.kwargs.password' would write a secret",
        ),
        (
            {"instructions": "x", "tools": {"t": {"norfab": CLI, "input_schema": {"properties": {"run_ttp": {}}}}}},
            "field 'tools.t.input_schema'",
            "input_schema offers 'run_ttp'",
        ),
        (
            {"instructions": "x", "tools": {"t": {"norfab": CLI, "allow_commands": []}}},
            "field 'tools.t.allow_commands'",
            "omit it for the read-only default",
        ),
        (
            {"instructions": "x", "tools": {"t": {"norfab": CLI, "allow_commands": ["("]}}},
            "field 'tools.t.allow_commands'",
            "allow_commands pattern '(' is not a valid regular expression",
        ),
        (
            {"instructions": "x", "tools": {"t": {"norfab": CLI}}, "delegates": {"t": {"agent": "b", "workers": "w"}}},
            "field 'delegates'",
            "t named both under tools and under delegates; rename one",
        ),
        (
            {"instructions": "x", "delegates": {"d": {"agent": "b", "workers": "hermes-*"}}},
            "field 'delegates.d.workers'",
            "must name exactly one hermes worker",
        ),
        (
            {"instructions": "x", "delegates": {"d": {"agent": "b", "workers": "all"}}},
            "field 'delegates.d.workers'",
            "must name exactly one hermes worker",
        ),
        (
            {"instructions": "x", "delegates": {"d": {"agent": "Default", "workers": "w"}}},
            "field 'delegates.d.agent'",
            "agent name 'Default' is not a valid profile name",
        ),
        ({"from_yaml_file": "http://x"}, "field 'from_yaml_file'", "must be an nf:// or git:// URL"),
    ],
)
def test_a_bad_agent_definition_names_the_agent_and_field(data, where, fix):
    """Each bad agent definition is refused with the agent, the field and what to do."""
    message = refusal("lab", data)
    assert message.startswith(f"agent 'lab': {where}"), message
    assert fix in message


def test_an_agent_that_is_not_a_mapping_is_refused():
    """An agent entry that is not a mapping says what it must hold."""
    assert refusal("lab", "just text") == "agent 'lab': expected a mapping with 'instructions' or 'from_yaml_file'"


def test_a_good_definition_and_a_reference_parse():
    """A definition with instructions, and a reference to an nf:// file, are accepted as what they are."""
    assert isinstance(
        parse_agent("lab", {"instructions": "You check.", "tools": {"t": {"norfab": CLI}}}), AgentDefinition
    )
    assert isinstance(parse_agent("lab", {"from_yaml_file": "nf://agents/lab.yaml"}), AgentReference)


@pytest.mark.parametrize("name", ["Lab", "-lab", "la b", "default", "hermes", "x" * 65, ""])
def test_bad_agent_names_are_refused(name):
    """Names that are not valid Hermes profile names, or that Hermes reserves, are refused."""
    with pytest.raises(ValueError, match="is not a valid profile name"):
        check_agent_name(name)


@pytest.mark.parametrize("name", ["lab", "r1-check", "a_b", "0day", "x" * 64])
def test_good_agent_names_pass(name):
    """Lowercase names of letters, digits, '_' and '-' are valid."""
    assert check_agent_name(name) == name


@pytest.mark.parametrize(
    "data, expected",
    [
        ({"service": "nornir"}, "hermes inventory: field 'service'"),
        ({"agents": {"Bad Name": {}}}, "hermes inventory: field 'agents'"),
        ({"host_tools": {"default": ["terminal"]}}, "hermes inventory: field 'host_tools'"),
        ({"model": {"api_key": "x"}}, "hermes inventory: field 'model'"),
        ({"max_turns": 0}, "hermes inventory: field 'max_turns'"),
        ({"hermes_log_level": "TRACE"}, "hermes inventory: field 'hermes_log_level'"),
        ({"colour": 1}, "hermes inventory: unknown key 'colour' (allowed: agents,"),
    ],
)
def test_a_bad_worker_inventory_names_the_field(data, expected):
    """Each bad worker inventory setting is refused naming the field."""
    with pytest.raises(InventoryError) as error:
        parse_inventory(data)
    assert str(error.value).startswith(expected), str(error.value)


def test_an_empty_inventory_has_safe_defaults():
    """An empty worker inventory is valid, with bounded runs and tools."""
    inventory = parse_inventory({})
    assert inventory.service == "hermes"
    assert inventory.max_turns == 20
    assert inventory.max_tool_calls == 30
    assert inventory.max_repeated_calls == 3
    assert inventory.host_tools == {}


def test_a_lineage_depth_must_match_its_chain():
    """A forged lineage whose depth and chain disagree is refused."""
    with pytest.raises(ValidationError, match="chain lists 1 runs for depth 2; they must agree"):
        Lineage(parent_run_id="p", root_run_id="r", depth=2, chain=["a@w"])


def test_a_lineage_deeper_than_the_limit_is_refused():
    """No lineage may be deeper than MAX_DELEGATION_DEPTH."""
    with pytest.raises(ValidationError, match="depth"):
        Lineage(parent_run_id="p", root_run_id="r", depth=6, chain=["a@w"] * 6)
