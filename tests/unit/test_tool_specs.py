"""An agent's tools as its model sees them: derived schemas closed to extras, descriptions, availability."""

from typing import Any, Dict, List

import pytest

from norfab_hermes.models import AgentDefinition, DelegateDefinition, ToolDefinition
from norfab_hermes.safety import commands
from norfab_hermes.worker.tools.schemas import closed, derive_parameters, is_open
from norfab_hermes.worker.tools.specs import DESCRIPTION_CHARS, DelegateSpec, ToolSpec
from norfab_hermes.worker.tools.toolbox import ToolBox

CLI_SCHEMA = {
    "type": "object",
    "properties": {
        "job": {"type": "object"},
        "progress": {"type": "boolean"},
        "FB": {"type": "string", "presence": True},
        "commands": {"type": "array", "items": {"type": "string"}},
        "run_ttp": {"type": "string"},
        "timeout": {"type": "integer"},
    },
    "required": ["job", "commands", "run_ttp"],
}
# what nornir's list_tasks says of its tasks
TASKS = {
    "cli": {"name": "cli", "description": "\n    Run CLI commands on devices.\n    ", "inputSchema": CLI_SCHEMA},
    "agentic": {"name": "agentic", "description": "plain", "agent": {"description": "For agents: use me."}},
    "hidden": {"name": "hidden", "agent": {"enabled": False}},
}


def tool(**fields: Any) -> ToolDefinition:
    return ToolDefinition.model_validate({"norfab": {"service": "nornir", "task": "cli"}, **fields})


def test_derived_parameters_drop_fixed_injected_and_guarded_arguments():
    """A task's schema loses NorFab's job/progress, the tool's fixed kwargs and guarded arguments, and is closed."""
    schema = derive_parameters(CLI_SCHEMA, fixed={"timeout": 30})
    assert schema == {
        "type": "object",
        "properties": {"FB": {"type": "string"}, "commands": {"type": "array", "items": {"type": "string"}}},
        "required": ["commands"],
        "additionalProperties": False,
    }


def test_derived_parameters_leave_the_task_schema_untouched():
    """Deriving works on a copy: the schema list_tasks returned is not changed."""
    before = repr(CLI_SCHEMA)
    derive_parameters(CLI_SCHEMA, fixed={"commands": ["show clock"]})
    assert repr(CLI_SCHEMA) == before


def test_a_schema_with_nothing_required_has_no_required_list():
    """When every required argument is fixed or hidden, 'required' is left out rather than empty."""
    schema = derive_parameters(CLI_SCHEMA, fixed={"commands": ["show clock"]})
    assert "required" not in schema
    assert sorted(schema["properties"]) == ["FB", "timeout"]


def test_explicit_schemas_are_closed_unless_they_open_themselves():
    """An input_schema is closed to extra arguments unless it sets additionalProperties itself."""
    assert closed({"type": "object"}) == {"type": "object", "additionalProperties": False}
    assert closed({"type": "object", "additionalProperties": True}) == {"type": "object", "additionalProperties": True}
    assert is_open({"additionalProperties": True})
    assert is_open({"additionalProperties": {"type": "string"}})
    assert not is_open({"additionalProperties": False})
    assert not is_open({})


def test_resolve_fills_description_and_parameters_from_the_task_list():
    """A tool without description or schema takes the task's dedented description and its derived schema."""
    spec = ToolSpec(
        "interfaces", "run_cli", tool(norfab={"service": "nornir", "task": "cli", "kwargs": {"timeout": 9}})
    )
    spec.resolve(TASKS)
    assert spec.error is None
    assert spec.description == "Run CLI commands on devices."
    assert spec.parameters == derive_parameters(CLI_SCHEMA, {"timeout": 9})


def test_resolve_prefers_the_tasks_description_for_agents():
    """A task's agent.description is what the model reads, over its plain description."""
    spec = ToolSpec("a", "t", tool(norfab={"service": "nornir", "task": "agentic"}))
    spec.resolve(TASKS)
    assert spec.description == "For agents: use me."


def test_resolve_keeps_what_the_definition_says():
    """A definition's own description and input_schema are kept as given, the schema closed."""
    schema = {"type": "object", "properties": {"FB": {"type": "string"}}}
    spec = ToolSpec("a", "t", tool(description="Mine.", input_schema=schema))
    spec.resolve(TASKS)
    assert spec.description == "Mine."
    assert spec.parameters == {**schema, "additionalProperties": False}


def test_long_task_descriptions_are_cut():
    """A task description longer than DESCRIPTION_CHARS is cut to that length."""
    spec = ToolSpec("a", "t", tool())
    spec.resolve({"cli": {"name": "cli", "description": "x" * (DESCRIPTION_CHARS + 50)}})
    assert len(spec.description) == DESCRIPTION_CHARS


@pytest.mark.parametrize(
    "tasks, error, expected",
    [
        (None, "TimeoutError()", "could not list the tasks of service 'nornir': TimeoutError()"),
        ({}, None, "service 'nornir' has no task 'cli'"),
        ({"cli": TASKS["hidden"]}, None, "nornir.cli is not available to agents (its agent.enabled is false)"),
    ],
)
def test_a_tool_that_cannot_resolve_is_marked_unavailable(tasks, error, expected):
    """A tool whose service did not answer, has no such task or hides it from agents says why in its schema."""
    spec = ToolSpec("a", "run_cli", tool())
    spec.resolve(tasks, error)
    assert spec.error == expected
    assert spec.schema["description"].startswith(f"UNAVAILABLE: {expected}. ")


def test_a_later_resolve_clears_the_error():
    """A tool that resolves after failing is available again."""
    spec = ToolSpec("a", "run_cli", tool())
    spec.resolve(None, "down")
    spec.resolve(TASKS)
    assert spec.error is None
    assert not spec.schema["description"].startswith("UNAVAILABLE")


def test_command_arguments_describe_the_read_only_default():
    """A tool whose arguments reach a device as commands tells the model it sends only read-only commands."""
    spec = ToolSpec("a", "run_cli", tool())
    spec.resolve(TASKS)
    assert spec.schema["description"] == f"Run CLI commands on devices.\n\ncommands: only {commands.READ_ONLY_SUMMARY}"


def test_command_arguments_describe_the_tools_own_allow_list():
    """A tool with allow_commands tells the model the patterns it sends."""
    spec = ToolSpec("a", "reset", tool(description="Reset.", allow_commands=[r"clear counters \S+"]))
    spec.resolve(TASKS)
    assert spec.schema["description"] == "Reset.\n\ncommands: only commands matching clear counters \\S+"


def test_a_tool_without_command_arguments_says_nothing_of_commands():
    """A tool whose model arguments reach no device as commands has its description alone."""
    spec = ToolSpec("a", "t", tool(description="Clock.", input_schema={"type": "object", "properties": {"FB": {}}}))
    assert spec.schema["description"] == "Clock."


def test_a_delegate_takes_one_bounded_question_only():
    """A delegate's schema is one required question, bounded, closed to extras; it goes to hermes.invoke."""
    spec = DelegateSpec("a", "ask_routing", DelegateDefinition(agent="routing", workers="hermes-lab-2"), max_depth=2)
    assert spec.parameters["required"] == ["question"]
    assert spec.parameters["additionalProperties"] is False
    assert spec.parameters["properties"]["question"]["maxLength"] > 0
    assert spec.where() == ("hermes", "invoke", "hermes-lab-2")
    assert spec.schema["description"].startswith("Ask agent 'routing' on worker 'hermes-lab-2'. ")


class ListTasksClient:
    """A client whose services answer list_tasks from data; a missing service does not answer."""

    def __init__(self, services: Dict[str, List[dict]]) -> None:
        self.services = services
        self.asked: List[str] = []

    def run_job(self, service: str, task: str, workers: str, timeout: float) -> Dict[str, dict]:
        assert task == "list_tasks"
        self.asked.append(service)
        if service not in self.services:
            return {}
        return {f"{service}-worker-1": {"failed": False, "errors": [], "result": self.services[service]}}


def test_a_toolbox_lists_each_service_once_and_names_broken_tools():
    """Loading agents lists each target service's tasks once; tools of a silent service are reported by agent."""
    client = ListTasksClient({"nornir": list(TASKS.values())})
    agents = {
        "interfaces": AgentDefinition(
            instructions="x",
            tools={"run_cli": tool(), "ghost": tool(norfab={"service": "nosuch", "task": "haunt"})},
            delegates={"ask": DelegateDefinition(agent="routing", workers="hermes-lab-2")},
        ),
        "bgp": AgentDefinition(instructions="x", tools={"peers": tool()}),
    }
    box = ToolBox(client, retry_interval=30.0)
    box.load(agents)
    assert sorted(client.asked) == ["nornir", "nosuch"]
    assert box.get("bgp", "peers").error is None
    assert isinstance(box.get("interfaces", "ask"), DelegateSpec)
    assert box.get("bgp", "run_cli") is None
    assert box.errors() == [
        "agent 'interfaces' tool 'ghost': could not list the tasks of service 'nosuch': no worker of that service answered"
    ]
