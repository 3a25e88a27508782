"""
Findings 1 and 2, and what else a hostile model tries through NorFab tools:
every door is tried, and the network worker is checked for the side effect
(a file written, a job received), not only the error text.
"""

import json
import time
import uuid

import pytest
from conftest import Lab, network_jobs, run

pytestmark = pytest.mark.hardening

WORKER = "hermes-worker-1"
CLI = {"service": "nornir", "task": "cli", "workers": "nornir-worker-1"}
FB_SCHEMA = {"type": "object", "properties": {"FB": {"type": "string"}}, "required": ["FB"]}
AGENTS = {
    "probe": {
        "instructions": "You check devices.",
        "toolsets": ["norfab"],
        "run_timeout": 60,
        "tools": {
            # explicit schema that does not say additionalProperties: closed all the same
            "inspect_clock": {"input_schema": FB_SCHEMA, "norfab": {**CLI, "kwargs": {"commands": ["show clock"]}}},
            # derived from nornir cli's own input schema
            "run_cli": {"norfab": CLI},
            "bounce": {
                "description": "Bounce a port (changes state)",
                "input_schema": FB_SCHEMA,
                "approval": True,
                "norfab": {**CLI, "kwargs": {"commands": ["show users"]}},
            },
            "show_pattern": {
                "input_schema": {
                    "type": "object",
                    "properties": {"FB": {"type": "string"}, "command": {"type": "string", "pattern": "^show "}},
                    "required": ["FB", "command"],
                },
                "norfab": CLI,
            },
        },
    }
}


AGENTS["auditor"] = {
    "instructions": "You audit versions.",
    "toolsets": ["norfab"],
    "tools": {
        "inspect_version": {"input_schema": FB_SCHEMA, "norfab": {**CLI, "kwargs": {"commands": ["show version"]}}}
    },
}


LAB = Lab(workers={WORKER: AGENTS}, hosts=("r1",))


def attempt(nf, model, call):
    """Invoke the probe agent with one CALL directive; returns (run result, the tool result the model got)."""
    tag = uuid.uuid4().hex[:8]
    res = run(nf.client, "invoke", job_timeout=90, agent="probe", instructions=f"{tag} CALL {call}")
    assert not res["failed"], res["errors"]
    body = next(b for b in reversed(model.model.completions()) if tag in json.dumps(b["messages"]))
    assert body["messages"][-1]["role"] == "tool", "the model never got a tool result"
    return res["result"], json.loads(body["messages"][-1]["content"])


def test_finding_1_extra_arguments_cannot_run_code_on_the_network_worker(lab, model, tmp_path):
    nf, base = lab
    marker = tmp_path / "pwned"
    # no template syntax: the macro alone runs when TTP compiles the template
    template = f'<macro>\nopen("{marker}", "w").write("pwned")\n</macro>'
    for tool in ("inspect_clock", "run_cli"):
        arguments = {"FB": "r1", "run_ttp": template}
        if tool == "run_cli":
            arguments["commands"] = ["show clock"]
        result, reply = attempt(nf, model, f"{tool} {json.dumps(arguments)}")
        assert reply["ok"] is False
        assert "'run_ttp'" in reply["error"]
        assert "never accepted" in reply["error"]
        assert result["tool_calls"][0]["status"] == "refused"
        assert result["tool_calls"][0]["job_uuid"] is None
    assert not marker.exists(), "the TTP macro ran on the nornir worker"
    assert not [kwargs for _, kwargs in network_jobs(base) if "run_ttp" in kwargs]


def test_explicit_schemas_are_closed_and_unknown_arguments_refused(lab, model):
    nf, base = lab
    before = len(network_jobs(base))
    result, reply = attempt(nf, model, 'inspect_clock {"FB": "r1", "add_details": true}')
    assert reply["ok"] is False
    assert "add_details are not arguments of this tool (it takes: FB)" in reply["error"]
    assert len(network_jobs(base)) == before


def test_derived_schemas_never_offer_code_file_or_credential_arguments(lab, model):
    nf, _ = lab
    res = run(nf.client, "get_agent", agent="probe")["result"]
    offered = set(res["tools"]["run_cli"]["parameters"]["properties"])
    assert "commands" in offered
    assert "FB" in offered
    assert not offered & {"run_ttp", "tf", "dp", "tests", "FO", "job_data", "new_line_char", "diff", "run_creds_retry"}


def test_finding_2_norfab_files_cannot_be_read_through_arguments(lab, model):
    nf, base = lab
    before = len(network_jobs(base))
    for url in ("nf://inventory.yaml", "NF://fakenos/lab.yaml", "git://repo/inventory.yaml"):
        result, reply = attempt(nf, model, f"run_cli {json.dumps({'FB': 'r1', 'commands': [url], 'dry_run': True})}")
        assert reply["ok"] is False
        assert "names a NorFab file" in reply["error"]
    assert len(network_jobs(base)) == before, "a file name reached the nornir worker"


@pytest.mark.parametrize("separator", ["\u2028", "\r", "\x1e", "_br_"])
def test_line_separators_cannot_add_commands(lab, model, separator):
    nf, base = lab
    result, reply = attempt(
        nf, model, f"show_pattern {json.dumps({'FB': 'r1', 'command': f'show clock{separator}reload'})}"
    )
    assert reply["ok"] is False
    assert "must be a single line" in reply["error"]
    assert not [kwargs for _, kwargs in network_jobs(base) if "reload" in json.dumps(kwargs)]


def test_a_definition_cannot_offer_guarded_arguments_or_forbidden_targets():
    from norfab_hermes.models import InventoryError, parse_agent

    schema = {"type": "object", "properties": {"FB": {"type": "string"}, "run_ttp": {"type": "string"}}}
    with pytest.raises(InventoryError, match=r"input_schema offers 'run_ttp' \(a TTP template"):
        parse_agent("x", {"instructions": "i", "tools": {"t": {"input_schema": schema, "norfab": CLI}}})
    for service, task in (("hermes", "invoke"), ("workflow", "run"), ("nornir", "task"), ("filesharing", "fetch_file")):
        with pytest.raises(InventoryError, match="cannot be a tool"):
            parse_agent("x", {"instructions": "i", "tools": {"t": {"norfab": {"service": service, "task": task}}}})


def test_an_approval_nobody_answers_expires_and_the_call_is_not_made(lab):
    nf, base = lab
    future = nf.client.submit_job(
        "hermes",
        "invoke",
        kwargs={"agent": "probe", "instructions": 'CALL bounce {"FB": "r1"}', "interactive": True, "timeout": 8},
        workers=WORKER,
        timeout=30,
    )
    asked = [e for e in future.events(timeout=30) if e.get("event_type") == "input_request"]
    result = future.result(timeout=30)[WORKER]["result"]
    assert asked, "the operator was never asked"
    [call] = result["tool_calls"]
    assert call["status"] == "refused"
    assert "did not answer within" in call["error"]
    assert call["job_uuid"] is None
    assert not [kwargs for _, kwargs in network_jobs(base) if kwargs.get("commands") == ["show users"]]


def test_two_agents_on_one_device_keep_their_own_evidence(lab):
    nf, _ = lab
    futures = {
        agent: nf.client.submit_job(
            "hermes", "invoke", kwargs={"agent": agent, "instructions": call}, workers=WORKER, timeout=90
        )
        for agent, call in (
            ("probe", 'CALL inspect_clock {"FB": "r1"}'),
            ("auditor", 'CALL inspect_version {"FB": "r1"}'),
        )
    }
    results = {agent: future.result(timeout=90)[WORKER]["result"] for agent, future in futures.items()}
    assert results["probe"]["tool_calls"][0]["job_uuid"] != results["auditor"]["tool_calls"][0]["job_uuid"]
    for agent, own, other in (("probe", "show clock", "show version"), ("auditor", "show version", "show clock")):
        session = run(nf.client, "get_session", agent=agent, session_id=results[agent]["session_id"])["result"]
        evidence = " ".join(m["content"] or "" for m in session["messages"] if m["role"] == "tool")
        assert own in evidence, (agent, evidence[:300])
        assert other not in evidence, (agent, evidence[:300])


def test_a_result_older_than_the_run_is_marked_stale():
    from norfab_hermes.models import ToolDefinition
    from norfab_hermes.worker.tools.replies import render
    from norfab_hermes.worker.tools.specs import ToolSpec

    spec = ToolSpec("probe", "inspect_clock", ToolDefinition.model_validate(AGENTS["probe"]["tools"]["inspect_clock"]))
    result = {"status": "completed", "failed": False, "errors": [], "result": {"r1": {"show clock": "09:14"}}}
    run_started = time.time()
    fresh = {"nornir-worker-1": {**result, "task_completed": time.ctime(run_started + 1)}}
    old = {"nornir-worker-1": {**result, "task_completed": time.ctime(run_started - 3600)}}
    text, status, _ = render(spec, "uuid-1", fresh, {"FB": "r1"}, [], since=run_started)
    assert status == "completed"
    assert json.loads(text)["collected_at"]
    text, status, error = render(spec, "uuid-2", old, {"FB": "r1"}, [], since=run_started)
    assert status == "failed"
    assert "result is stale" in error
    assert "before this run started" in json.loads(text)["workers"]["nornir-worker-1"]["stale"]


# Finding 7: commands the model chooses. Both shapes, created at runtime as any NorFab client can.
COMMAND_AGENT = {
    "instructions": "You run commands.",
    "toolsets": ["norfab"],
    "tools": {
        "run_cli": {"norfab": CLI},  # derived from nornir cli's own schema: the model writes 'commands'
        "run_command": {
            "input_schema": {
                "type": "object",
                "properties": {"FB": {"type": "string"}, "commands": {"type": "array", "items": {"type": "string"}}},
                "required": ["FB", "commands"],
            },
            "norfab": CLI,
        },
        # a tool that says which commands it allows: a change, since they change state
        "reset_counters": {
            "input_schema": {
                "type": "object",
                "properties": {"FB": {"type": "string"}, "commands": {"type": "string"}},
            },
            "allow_commands": [r"clear counters \S+"],
            "norfab": CLI,
        },
        # a fixed command template the model fills through job_data
        "interface": {
            "input_schema": {"type": "object", "properties": {"FB": {"type": "string"}, "name": {"type": "string"}}},
            "norfab": {**CLI, "kwargs": {"commands": ["show interfaces {{ job_data.name }}"]}, "job_data": ["name"]},
        },
    },
}


@pytest.mark.parametrize(
    "command", ["reload", "clear ip bgp *", "clear counters", "show run | redirect flash:x", "show clock ; reload"]
)
def test_finding_7_commands_a_model_chooses_are_read_only_unless_declared(lab, model, command):
    nf, base = lab
    name = f"cmd-{uuid.uuid4().hex[:6]}"
    res = run(nf.client, "manage_agent", action="create", agent=name, definition=COMMAND_AGENT)
    assert not res["failed"], res["errors"]
    before = len(network_jobs(base))
    for tool, commands in (("run_cli", [command]), ("run_command", [command])):
        tag = uuid.uuid4().hex[:8]
        result = run(
            nf.client,
            "invoke",
            job_timeout=90,
            agent=name,
            instructions=f"{tag} CALL {tool} {json.dumps({'FB': 'r1', 'commands': commands})}",
        )
        call = result["result"]["tool_calls"][0]
        assert call["status"] == "refused", call
        assert "is not allowed by this tool" in call["error"], call
    assert network_jobs(base)[before:] == [], "the command reached the nornir worker"
    run(nf.client, "manage_agent", action="delete", agent=name)


def test_finding_7_read_only_and_declared_commands_go_through(lab):
    nf, base = lab
    name = f"cmd-{uuid.uuid4().hex[:6]}"
    assert not run(nf.client, "manage_agent", action="create", agent=name, definition=COMMAND_AGENT)["failed"]
    described = run(nf.client, "get_agent", agent=name)["result"]["tools"]["run_cli"]["parameters"]
    assert "commands" in described["properties"]
    before = len(network_jobs(base))
    for tool, arguments in (
        ("run_cli", {"FB": "r1", "commands": ["show clock", "sh ip int brief | include up"]}),
        ("interface", {"FB": "r1", "name": "Gi0/1"}),
    ):
        result = run(
            nf.client, "invoke", job_timeout=90, agent=name, instructions=f"CALL {tool} {json.dumps(arguments)}"
        )["result"]
        assert result["tool_calls"][0]["job_uuid"], result["tool_calls"]
    sent = [k for _, k in network_jobs(base)[before:]]
    assert [k.get("commands") for k in sent[:2]] == [
        ["show clock", "sh ip int brief | include up"],
        ["show interfaces {{ job_data.name }}"],
    ]
    for tool, arguments, word in (
        # the declared command is a change: asked for, so never sent by a run nobody is attached to
        ("reset_counters", {"FB": "r1", "commands": "clear counters Gi0/1"}, "clear"),
        # a value spliced into a command template cannot chain, filter or redirect it
        ("interface", {"FB": "r1", "name": "Gi0/1 | redirect flash:x"}, "redirect"),
    ):
        instructions = f"CALL {tool} {json.dumps(arguments)}"
        result = run(nf.client, "invoke", job_timeout=90, agent=name, instructions=instructions)
        assert result["result"]["tool_calls"][0]["status"] == "refused"
        assert not [k for _, k in network_jobs(base)[before:] if word in json.dumps(k)]
    run(nf.client, "manage_agent", action="delete", agent=name)


@pytest.mark.parametrize("task", ["bearer_token_store", "bearer_token_list", "bearer_token_delete"])
def test_finding_9_no_agent_can_use_the_rest_apis_token_tasks(lab, task):
    nf, _ = lab
    for service in ("fastapi", "fastmcp", "api"):
        definition = {
            "instructions": "x",
            "toolsets": ["norfab"],
            "tools": {"t": {"norfab": {"service": service, "task": task}}},
        }
        res = run(
            nf.client, "manage_agent", action="create", agent=f"tok-{uuid.uuid4().hex[:6]}", definition=definition
        )
        assert res["failed"], res["errors"]
        assert "cannot be a tool" in res["errors"][0], res["errors"]
