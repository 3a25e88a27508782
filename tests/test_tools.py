"""
NorFab tools end to end: scripted model -> Hermes -> NorFab tool -> nornir
worker -> FakeNOS devices over SSH on 127.0.0.1, and back.
"""

import concurrent.futures
import json

from conftest import Lab, invoke, result_of, run

WORKER = "hermes-worker-1"
CLI = {"service": "nornir", "task": "cli", "workers": "all"}
FB_SCHEMA = {"type": "object", "properties": {"FB": {"type": "string"}}, "required": ["FB"]}

AGENTS = {
    "interfaces": {
        "instructions": "You check interfaces.",
        "toolsets": ["norfab"],
        "run_timeout": 30,
        "tools": {
            "inspect_interfaces": {
                "description": "Show interfaces of one device",
                "input_schema": FB_SCHEMA,
                "norfab": {**CLI, "kwargs": {"commands": ["show interfaces"]}},
            },
            "run_cli": {"norfab": {**CLI, "kwargs": {"plugin": "netmiko"}}},
            "show_thing": {
                "input_schema": {
                    "type": "object",
                    "properties": {"FB": {"type": "string"}, "what": {"type": "string"}},
                    "required": ["FB", "what"],
                },
                # raw: NorFab renders inventory with Jinja2 before the worker sees it
                "norfab": {
                    **CLI,
                    "kwargs": {"commands": ["{% raw %}show {{ job_data.what }}{% endraw %}"]},
                    "job_data": ["what"],
                },
            },
            "clock_on_one_worker": {
                "input_schema": FB_SCHEMA,
                "norfab": {**CLI, "workers": "nornir-worker-1", "kwargs": {"commands": ["show clock"]}},
            },
            "clock_nowhere": {
                "input_schema": FB_SCHEMA,
                "norfab": {**CLI, "workers": "nornir-worker-9", "kwargs": {"commands": ["show clock"]}},
            },
            "broken_task": {
                "input_schema": {"type": "object", "properties": {}},
                "norfab": {"service": "nornir", "task": "echo", "kwargs": {"raise_error": "device exploded"}},
            },
            "slow_task": {
                "input_schema": {"type": "object", "properties": {}},
                "norfab": {"service": "nornir", "task": "echo", "kwargs": {"sleep": 12}, "timeout": 60},
            },
            "bounce_port": {
                "description": "Bounce a port (changes state)",
                "input_schema": FB_SCHEMA,
                "approval": True,
                "norfab": {**CLI, "kwargs": {"commands": ["show clock"]}},
            },
        },
    },
    "routing": {
        "instructions": "You check routing.",
        "toolsets": ["norfab"],
        "tools": {
            # same name as the interfaces agent's tool, different schema and target
            "inspect_interfaces": {
                "description": "Show interfaces of r2",
                "input_schema": {"type": "object", "properties": {"detail": {"type": "boolean"}}},
                "norfab": {**CLI, "kwargs": {"commands": ["show interfaces"], "FB": "r2"}},
            }
        },
    },
    "quiet": {"instructions": "No tools for you.", "toolsets": ["norfab"], "tools": {}},
    "ghost": {
        "instructions": "Your service is missing.",
        "toolsets": ["norfab"],
        "tools": {
            "haunt": {
                "input_schema": {"type": "object", "properties": {}},
                "norfab": {"service": "nosuch", "task": "cli"},
            }
        },
    },
}


LAB = Lab(workers={WORKER: AGENTS}, hosts=("r1", "r2"), settings={"tool_result_max_chars": 30000})


def mentions(body, text):
    return any(text in str(m.get("content")) for m in body["messages"])


def tool_result(nf, model, instructions, agent="interfaces", **kwargs):
    """Invoke, then return (run result, the tool result the model received, parsed when whole)."""
    result = invoke(nf, agent, instructions, **kwargs)
    body = next(
        b
        for b in reversed(model.model.completions())
        if mentions(b, instructions) and b["messages"][-1]["role"] == "tool"
    )
    content = body["messages"][-1]["content"]
    return result, content if "[truncated:" in content else json.loads(content)


def test_agent_reads_real_device_output(nf, model):
    result, tool = tool_result(nf, model, 'CALL inspect_interfaces {"FB": "r1"}')
    output = tool["workers"]["nornir-worker-1"]["result"]["r1"]["show interfaces"]
    assert "FastEthernet1 is down, line protocol is down" in output
    assert "FastEthernet1 is down, line protocol is down" in result["response"]
    [call] = result["tool_calls"]
    assert (call["tool"], call["service"], call["task"], call["workers"]) == (
        "inspect_interfaces",
        "nornir",
        "cli",
        "all",
    )
    assert call["status"] == "completed"
    assert call["job_uuid"] == tool["job_uuid"]
    assert call["truncated"] is False
    assert call["duration"] > 0
    assert len(call["arguments_digest"]) == 12


def test_model_sees_only_its_own_tools_with_derived_schemas(nf, model):
    invoke(nf, "interfaces", "list my tools please")
    body = next(b for b in reversed(model.model.completions()) if mentions(b, "list my tools please"))
    tools = {t["function"]["name"]: t["function"] for t in body["tools"]}
    assert set(tools) == set(AGENTS["interfaces"]["tools"])
    derived = tools["run_cli"]["parameters"]
    assert "commands" in derived["properties"]
    assert "FB" in derived["properties"]
    assert not {"job", "progress", "plugin"} & set(derived["properties"])  # injected and fixed arguments
    assert derived["additionalProperties"] is False
    assert "Task to collect/retrieve show commands output" in tools["run_cli"]["description"]
    assert tools["inspect_interfaces"]["parameters"] == {**FB_SCHEMA, "additionalProperties": False}  # closed

    invoke(nf, "quiet", "list quiet tools")
    body = next(b for b in reversed(model.model.completions()) if mentions(b, "list quiet tools"))
    assert not body.get("tools")


def test_fixed_arguments_cannot_be_overridden(nf, model):
    result, tool = tool_result(nf, model, 'CALL inspect_interfaces {"detail": true, "FB": "r1"}', agent="routing")
    assert tool["ok"] is False
    assert "FB are fixed by the tool definition" in tool["error"]
    result, tool = tool_result(nf, model, 'CALL run_cli {"commands": ["show clock"], "FB": "r1", "plugin": "scrapli"}')
    assert tool["ok"] is False
    assert "plugin are fixed by the tool definition" in tool["error"]
    assert result["tool_calls"][0]["status"] == "refused"
    assert result["tool_calls"][0]["job_uuid"] is None


def test_invalid_arguments_come_back_as_a_readable_tool_error(nf, model):
    result, tool = tool_result(nf, model, 'CALL inspect_interfaces {"FB": 42}')
    assert tool["ok"] is False
    assert "invalid arguments (FB): 42 is not of type 'string'" in tool["error"]
    assert result["stop_reason"] == "completed"


def test_job_data_feeds_the_task_template(nf, model):
    result, tool = tool_result(nf, model, 'CALL show_thing {"FB": "r2", "what": "clock"}')
    output = tool["workers"]["nornir-worker-1"]["result"]["r2"]
    assert list(output) == ["show clock"]
    assert "UTC" in output["show clock"]


def test_workers_selector_routes_the_job(nf, model):
    result, tool = tool_result(nf, model, 'CALL clock_on_one_worker {"FB": "r1"}')
    assert list(tool["workers"]) == ["nornir-worker-1"]
    assert result["tool_calls"][0]["workers"] == "nornir-worker-1"
    result, tool = tool_result(nf, model, 'CALL clock_nowhere {"FB": "r1"}')
    assert tool["ok"] is False
    assert "no worker matched 'nornir-worker-9'" in tool["error"]


def test_failing_task_keeps_its_errors_and_child_job(nf, model):
    result, tool = tool_result(nf, model, "CALL broken_task {}")
    assert tool["ok"] is False
    assert "device exploded" in json.dumps(tool["workers"]["nornir-worker-1"]["errors"])
    assert tool["job_uuid"]
    assert result["tool_calls"][0] == {**result["tool_calls"][0], "status": "failed", "job_uuid": tool["job_uuid"]}


def test_tool_timeout_is_capped_by_the_run_budget(nf, model):
    # the task takes 12 s and allows itself 60; the run's 6 s budget cuts it first
    result = invoke(nf, "interfaces", "CALL slow_task {}", timeout=6)
    [call] = result["tool_calls"]
    assert call["status"] == "failed"
    assert "timed out" in call["error"]
    assert call["duration"] < 12, call


def test_huge_results_are_truncated_and_flagged(nf, model):
    result, text = tool_result(nf, model, 'CALL run_cli {"commands": ["show interfaces", "show version"], "FB": "r*"}')
    assert isinstance(text, str)
    assert "[truncated: showing 30000 of" in text
    assert result["tool_calls"][0]["truncated"] is True


def test_same_tool_name_in_two_agents_runs_each_definition_concurrently(nf, model):
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        jobs = [
            pool.submit(invoke, nf, "interfaces", f'CALL inspect_interfaces {{"FB": "r1"}} #{i}')
            if i % 2 == 0
            else pool.submit(invoke, nf, "routing", f"CALL inspect_interfaces {{}} #{i}")
            for i in range(4)
        ]
        results = [j.result() for j in jobs]
    for i, result in enumerate(results):
        host = "r1" if i % 2 == 0 else "r2"
        assert f'"{host}": {{"show interfaces"' in result["response"], result["response"][:300]
        assert result["tool_calls"][0]["status"] == "completed"
    schemas = {}
    for body in model.model.completions():
        for tool in body.get("tools") or []:
            if tool["function"]["name"] == "inspect_interfaces":
                persona = body["messages"][0]["content"].split(".")[0]
                schemas[persona] = tool["function"]["parameters"]
    assert schemas["You check interfaces"] == {**FB_SCHEMA, "additionalProperties": False}
    assert schemas["You check routing"]["properties"] == {"detail": {"type": "boolean"}}


def test_tool_events_reach_the_invoke_job(nf):
    future = nf.client.submit_job(
        "hermes",
        "invoke",
        kwargs={"agent": "interfaces", "instructions": 'CALL inspect_interfaces {"FB": "r2"}'},
        workers=WORKER,
    )
    messages = [e["message"] for e in future.events(timeout=60) if e.get("event_type") == "progress"]
    result = result_of(future, WORKER)["result"]
    uuid = result["tool_calls"][0]["job_uuid"]
    assert "tool inspect_interfaces calling nornir.cli" in messages
    assert f"tool inspect_interfaces completed, job {uuid}" in messages


def test_approval_interactive_yes_and_no(nf):
    for answer, status in ((True, "completed"), (False, "refused")):
        future = nf.client.submit_job(
            "hermes",
            "invoke",
            kwargs={"agent": "interfaces", "instructions": 'CALL bounce_port {"FB": "r1"}', "interactive": True},
            workers=WORKER,
        )
        asked = []
        for event in future.events(timeout=60):
            request = (event.get("extras") or {}).get("input_request")
            if event.get("event_type") == "input_request" and request:
                asked.append(request["question"])
                future.send_response(input_id=request["id"], value=answer, worker=WORKER)
        result = result_of(future, WORKER)["result"]
        assert len(asked) == 1
        assert "bounce_port (nornir.cli)" in asked[0]
        assert '"FB": "r1"' in asked[0]
        [call] = result["tool_calls"]
        assert call["status"] == status
        assert bool(call["job_uuid"]) is answer
        if not answer:
            assert "the operator declined" in call["error"]


def test_approval_in_a_non_interactive_run_is_refused_without_waiting(nf):
    result = invoke(nf, "interfaces", 'CALL bounce_port {"FB": "r1"}')
    [call] = result["tool_calls"]
    assert call["status"] == "refused"
    assert "not interactive" in call["error"]
    assert result["approvals"] == [], "nothing was asked, so nothing waited for an answer"


def test_no_match_is_reported_as_such(nf, model):
    result, tool = tool_result(nf, model, 'CALL inspect_interfaces {"FB": "r99"}')
    assert tool["ok"] is False
    assert "no hosts matched the host filters" in tool["error"]


def test_an_empty_completed_result_for_named_hosts_is_not_evidence():
    # the signature of overlapping nornir jobs: completed, no errors, no data
    from norfab_hermes.models import ToolDefinition
    from norfab_hermes.worker.tools.replies import render
    from norfab_hermes.worker.tools.specs import ToolSpec

    spec = ToolSpec(
        "interfaces",
        "inspect_interfaces",
        ToolDefinition.model_validate(AGENTS["interfaces"]["tools"]["inspect_interfaces"]),
    )
    reply = {"nornir-worker-1": {"status": "completed", "failed": False, "errors": [], "result": {}}}
    text, status, error = render(spec, "uuid-1", reply, {"FB": "r1"}, [])
    assert status == "failed"
    assert "returned no data for the requested hosts" in error
    assert json.loads(text)["ok"] is False


def test_template_syntax_from_the_model_is_refused(nf, model):
    # nornir renders commands with Jinja2 and the worker's NorFab client in scope
    result, tool = tool_result(nf, model, 'CALL run_cli {"commands": ["show {{ norfab.name }}"], "FB": "r1"}')
    assert tool["ok"] is False
    assert "argument commands[0] contains template syntax" in tool["error"]
    assert result["tool_calls"][0]["job_uuid"] is None


def test_line_breaks_cannot_smuggle_commands_into_templates(nf, model):
    result, tool = tool_result(nf, model, 'CALL show_thing {"FB": "r1", "what": "clock\\nreload"}')
    assert tool["ok"] is False
    assert "argument what must be a single line" in tool["error"]


def test_a_tool_whose_service_does_not_answer_is_reported_and_refused(nf, model):
    errors = run(nf.client, "get_status")["result"]["errors"]
    assert any(e.startswith("agent 'ghost' tool 'haunt': could not list the tasks of service 'nosuch'") for e in errors)
    result, tool = tool_result(nf, model, "CALL haunt {}", agent="ghost")
    assert tool["ok"] is False
    assert "tool haunt is unavailable" in tool["error"]
    body = next(b for b in reversed(model.model.completions()) if mentions(b, "CALL haunt {}"))
    assert body["tools"][0]["function"]["description"].startswith("UNAVAILABLE: could not list the tasks")
