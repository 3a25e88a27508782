"""What answered a run: the definition digest (stable, and different for different definitions or tools),
the model settings a run names, and the case id an operator gives."""

import pytest

from norfab_hermes.models import AgentDefinition, InvokeInput, check_case_id
from norfab_hermes.worker.runs import provenance

TOOLS = {"clock": {"schema": {"description": "show clock", "parameters": {}}, "target": ["nornir", "cli", "any"]}}


def dump(**fields):
    return AgentDefinition(**{"instructions": "You check interfaces.", **fields}).model_dump(mode="json")


def test_the_same_definition_and_tools_give_the_same_digest_whatever_the_key_order():
    reordered = dict(reversed(list(dump().items())))
    assert provenance.definition_digest(dump(), TOOLS) == provenance.definition_digest(reordered, dict(TOOLS))
    assert len(provenance.definition_digest(dump(), TOOLS)) == provenance.DIGEST_CHARS


@pytest.mark.parametrize(
    "definition, tools",
    [
        (dump(instructions="You check routing."), TOOLS),
        (dump(run_timeout=60), TOOLS),
        (dump(), {}),
        (dump(), {"clock": {**TOOLS["clock"], "target": ["nornir", "cli", "nornir-worker-2"]}}),
        (dump(), {"clock": {**TOOLS["clock"], "schema": {"description": "show clock", "parameters": {"x": 1}}}}),
    ],
)
def test_another_definition_or_tool_set_gives_another_digest(definition, tools):
    assert provenance.definition_digest(definition, tools) != provenance.definition_digest(dump(), TOOLS)


@pytest.mark.parametrize(
    "profile, expected",
    [
        ({"default": "alpha-model", "provider": "custom"}, ("alpha-model", "custom")),
        ("gpt-x", ("gpt-x", None)),
        (None, ("inventory-model", "openrouter")),
    ],
)
def test_a_run_names_the_profile_model_else_the_inventory_one(profile, expected):
    inventory = {"default": "inventory-model", "provider": "openrouter"}
    assert provenance.model_settings(profile, inventory) == expected


def test_a_run_names_both_versions():
    made = provenance.of_agent(AgentDefinition(instructions="x"), {}, {"model": {"default": "m"}}, {})
    assert made.model == "m" and made.hermes_version and made.norfab_hermes_version


@pytest.mark.parametrize("case_id", ["INC-2041", "a", "chg:2026.12_01", "x" * 100])
def test_a_case_id_of_letters_digits_and_separators_is_taken(case_id):
    assert check_case_id(case_id) == case_id


@pytest.mark.parametrize("case_id", ["", "x" * 101, "INC 2041", "INC/2041", "inc;drop", "é", "INC-1\n"])
def test_a_bad_case_id_is_refused_with_the_field_and_the_fix(case_id):
    with pytest.raises(ValueError, match=r"case_id[\s\S]*1 to 100 letters, digits or the characters \. _ : -"):
        InvokeInput(agent="noc", instructions="check", case_id=case_id)
