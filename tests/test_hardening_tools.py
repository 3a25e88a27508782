"""
Findings 1 and 2, and what else a hostile model tries through NorFab tools:
every door is tried, and the network worker is checked for the side effect
(a file written, a job received), not only the error text.
"""

import json
import uuid

import pytest
from conftest import hermes_worker, network, network_jobs, norfab, run

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


@pytest.fixture(scope="module")
def lab(model, tmp_path_factory):
    base = tmp_path_factory.mktemp("lab")
    workers, files = network(["r1"])
    workers[WORKER] = {**hermes_worker(model.base_url, AGENTS), "depends_on": ["nornir-worker-1"]}
    with norfab(base, workers, files) as nf:
        yield nf, base


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
        assert reply["ok"] is False and "'run_ttp'" in reply["error"] and "never accepted" in reply["error"]
        assert result["tool_calls"][0]["status"] == "refused" and result["tool_calls"][0]["job_uuid"] is None
    assert not marker.exists(), "the TTP macro ran on the nornir worker"
    assert not [kwargs for _, kwargs in network_jobs(base) if "run_ttp" in kwargs]


def test_explicit_schemas_are_closed_and_unknown_arguments_refused(lab, model):
    nf, base = lab
    before = len(network_jobs(base))
    result, reply = attempt(nf, model, 'inspect_clock {"FB": "r1", "add_details": true}')
    assert reply["ok"] is False and "add_details are not arguments of this tool (it takes: FB)" in reply["error"]
    assert len(network_jobs(base)) == before


def test_derived_schemas_never_offer_code_file_or_credential_arguments(lab, model):
    nf, _ = lab
    res = run(nf.client, "get_agent", agent="probe")["result"]
    offered = set(res["tools"]["run_cli"]["parameters"]["properties"])
    assert "commands" in offered and "FB" in offered
    assert not offered & {"run_ttp", "tf", "dp", "tests", "FO", "job_data", "new_line_char", "diff", "run_creds_retry"}


def test_finding_2_norfab_files_cannot_be_read_through_arguments(lab, model):
    nf, base = lab
    before = len(network_jobs(base))
    for url in ("nf://inventory.yaml", "NF://fakenos/lab.yaml", "git://repo/inventory.yaml"):
        result, reply = attempt(nf, model, f'run_cli {json.dumps({"FB": "r1", "commands": [url], "dry_run": True})}')
        assert reply["ok"] is False and "names a NorFab file" in reply["error"]
    assert len(network_jobs(base)) == before, "a file name reached the nornir worker"


@pytest.mark.parametrize("separator", ["\u2028", "\r", "\x1e", "_br_"])
def test_line_separators_cannot_add_commands(lab, model, separator):
    nf, base = lab
    result, reply = attempt(nf, model, f'show_pattern {json.dumps({"FB": "r1", "command": f"show clock{separator}reload"})}')
    assert reply["ok"] is False and "must be a single line" in reply["error"]
    assert not [kwargs for _, kwargs in network_jobs(base) if "reload" in json.dumps(kwargs)]


def test_a_definition_cannot_offer_guarded_arguments_or_forbidden_targets():
    from norfab_hermes.models import InventoryError, parse_agent

    schema = {"type": "object", "properties": {"FB": {"type": "string"}, "run_ttp": {"type": "string"}}}
    with pytest.raises(InventoryError, match=r"input_schema offers 'run_ttp' \(a TTP template"):
        parse_agent("x", {"instructions": "i", "tools": {"t": {"input_schema": schema, "norfab": CLI}}})
    for service, task in (("hermes", "invoke"), ("workflow", "run"), ("nornir", "task"), ("filesharing", "fetch_file")):
        with pytest.raises(InventoryError, match="cannot be a tool"):
            parse_agent("x", {"instructions": "i", "tools": {"t": {"norfab": {"service": service, "task": task}}}})
