"""Tool classes as pure logic: what makes a tool read-only, a change or forbidden, and the definitions refused."""

import pytest

from norfab_hermes.errors import InventoryError
from norfab_hermes.models import parse_agent, parse_inventory
from norfab_hermes.safety.tool_class import CHANGE, FORBIDDEN, READ_ONLY, classify, read_only_pattern

CLI = ("nornir", "cli")


@pytest.mark.parametrize(
    "target, kwargs, allow, extra, kind",
    [
        (CLI, {}, None, None, READ_ONLY),
        (CLI, {"commands": ["show interfaces {{ job_data.port }} transceiver"]}, None, None, READ_ONLY),
        (CLI, {}, ["show .*", r"display\s+\S+"], None, READ_ONLY),
        (CLI, {}, ["clear .*"], None, CHANGE),
        (CLI, {}, ["show .*|reload"], None, CHANGE),
        (CLI, {"commands": ["reload"]}, None, None, CHANGE),
        (CLI, {"commands": ["show clock_br_reload"]}, None, None, CHANGE),  # nornir splits at _br_
        (CLI, {"commands": "nf://templates/x.j2"}, None, None, CHANGE),  # a file: its lines are unknown
        (CLI, {"commands": ['show {{ "\\nreload" }}']}, None, None, FORBIDDEN),
        (CLI, {"tests": ["x"]}, None, None, FORBIDDEN),
        (CLI, {"new_line_char": " "}, None, None, FORBIDDEN),
        (("nornir", "cfg"), {"config": ["interface Gi0/1"]}, None, None, CHANGE),
        (("nornir", "task"), {}, None, None, FORBIDDEN),
        (("nornir", "echo"), {"sleep": 1}, None, None, READ_ONLY),
        (("netbox", "get_devices"), {}, None, None, READ_ONLY),
        (("netbox", "crud_create"), {}, None, None, CHANGE),
        (("records", "site"), {}, None, None, CHANGE),
        (("records", "site"), {}, None, {"records": ["site"]}, READ_ONLY),
        (("records", "close"), {}, None, {"records": ["site"]}, CHANGE),
    ],
)
def test_a_tool_is_read_only_only_when_the_code_knows_it_changes_nothing(target, kwargs, allow, extra, kind):
    found = classify(*target, kwargs, allow, extra)
    assert found.kind == kind, found.reason
    assert found.reason


@pytest.mark.parametrize(
    "pattern, read_only",
    [
        ("show .*", True),
        (r"^show\s+ip .*", True),
        ("ping", True),
        ("SHOW (a|b)", True),
        ("sh.*", False),  # could be shutdown
        ("(show|clear) .*", False),
        ("show .*|clear .*", False),
        ("clear counters", False),
    ],
)
def test_an_allow_list_pattern_is_read_only_when_every_match_starts_with_a_read_only_verb(pattern, read_only):
    assert read_only_pattern(pattern) is read_only


def agent(tool):
    return {"instructions": "x", "toolsets": ["norfab"], "tools": {"t": tool}}


CFG = {"norfab": {"service": "nornir", "task": "cfg", "kwargs": {"config": ["interface Gi0/1"]}}}


@pytest.mark.parametrize(
    "tool, error",
    [
        ({**CFG, "approval": False}, "approval is false, but the tool can change the network (nornir.cfg:"),
        (
            {"norfab": {"service": "nornir", "task": "cli"}, "approvers": ["a"]},
            "approvers is set but the tool only reads",
        ),
        (
            {"norfab": {"service": "nornir", "task": "cli"}, "windows": ["sat 00:00-24:00"]},
            "windows: only for tools that change devices, and this one only reads",
        ),
        ({"norfab": {"service": "nornir", "task": "cli", "kwargs": {"run_ttp": "x"}}}, "norfab.kwargs.run_ttp cannot"),
    ],
)
def test_a_definition_that_would_open_a_door_is_refused_naming_the_tool(tool, error):
    with pytest.raises(InventoryError, match="tools.t") as refused:
        parse_agent("a", agent(tool))
    assert error in str(refused.value)


def test_a_change_needs_no_approval_key_and_the_inventory_can_list_read_only_tasks():
    assert parse_agent("a", agent(CFG)).tools["t"].tool_class().kind == CHANGE
    parsed = parse_agent(
        "a", agent({"norfab": {"service": "records", "task": "site"}, "approval": False}), {"records": ["site"]}
    )
    assert parsed.tools["t"].tool_class({"records": ["site"]}).kind == READ_ONLY
    with pytest.raises(InventoryError, match="approval is false"):
        parse_agent("a", agent({"norfab": {"service": "records", "task": "site"}, "approval": False}))


@pytest.mark.parametrize(
    "service, task", [("nornir", "cfg"), ("nornir", "cli"), ("nornir", "task"), ("hermes", "invoke")]
)
def test_the_inventory_cannot_list_a_change_or_forbidden_task_as_read_only(service, task):
    with pytest.raises(InventoryError, match=f"read_only_tasks: {service}.{task} cannot be listed"):
        parse_inventory({"read_only_tasks": {service: [task]}})
