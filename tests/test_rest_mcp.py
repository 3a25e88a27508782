"""
The agents through NorFab's own REST (fastapi) and MCP (fastmcp) services,
driven with an HTTP client and the mcp package's own client: start a run,
poll it to completion, approve what it waits for - and see only the hermes
tasks meant for such clients, with honest annotations.
"""

import asyncio
import time

import httpx
import pytest
from conftest import free_port, hermes_worker, network, network_jobs, norfab
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

WORKER = "hermes-worker-1"
FB_SCHEMA = {"type": "object", "properties": {"FB": {"type": "string"}}, "required": ["FB"]}
BOUNCE = {
    "input_schema": FB_SCHEMA,
    "approval": True,
    "norfab": {"service": "nornir", "task": "cli", "kwargs": {"commands": ["show users"]}},
}
AGENTS = {
    "alpha": {"instructions": "You are ALPHA."},
    "fixer": {"instructions": "You fix.", "toolsets": ["norfab"], "tools": {"bounce": BOUNCE}, "approval_timeout": 60},
}
API_TOKEN, MCP_TOKEN = "rest-token-5b8e0d", "mcp-token-77c1aa"
HIDDEN = {"job_details", "job_list", "get_logs", "echo", "delete_fetched_files", "run_shell_cmd", "get_worker_status"}


@pytest.fixture(scope="module")
def lab(model, tmp_path_factory):
    base = tmp_path_factory.mktemp("lab")
    workers, files = network(["r1"], users={WORKER: hermes_worker(model.base_url, AGENTS)})
    api_port, mcp_port = free_port(), free_port()
    workers["fastapi-worker-1"] = {
        "service": "fastapi",
        "uvicorn": {"host": "127.0.0.1", "port": api_port},
        "depends_on": [WORKER],
    }
    workers["fastmcp-worker-1"] = {
        "service": "fastmcp",
        "host": "127.0.0.1",
        "port": mcp_port,
        "authentication_enabled": True,
        "tools": {"policy": [{"service": "hermes", "action": "allow"}, {"service": "*", "action": "reject"}]},
        "depends_on": [WORKER],
    }
    with norfab(base, workers, files) as nf:
        for service, token in (("fastapi", API_TOKEN), ("fastmcp", MCP_TOKEN)):
            nf.client.run_job(
                service, "bearer_token_store", kwargs={"username": "lab", "token": token}, workers="all", timeout=30
            )
        nf.client.run_job("fastmcp", "discover", workers="all", timeout=60)
        yield nf, base, f"http://127.0.0.1:{api_port}", f"http://127.0.0.1:{mcp_port}/mcp"


def rest(url, task, **body):
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {API_TOKEN}"}, timeout=60) as http:
        reply = http.post(f"/api/hermes/{task}/", json={"workers": WORKER, **body})
    reply.raise_for_status()
    result = reply.json()[WORKER]
    assert not result["failed"], result["errors"]
    return result["result"]


def poll(call, until, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        state = call()
        if state["state"] in until:
            return state
        time.sleep(0.3)
    raise AssertionError(f"run stayed {state['state']}")


def test_rest_start_poll_and_approve(lab):
    nf, base, api, _ = lab
    started = time.time()
    accepted = rest(api, "start_run", agent="alpha", instructions="SLEEP 2")
    ids_after = time.time() - started
    assert accepted["run_id"], ids_after
    assert accepted["session_id"], ids_after
    assert ids_after < 1.5, ids_after
    finished = poll(lambda: rest(api, "get_run", agent="alpha", run_id=accepted["run_id"]), ("finished",))
    assert finished["result"]["response"] == "SLEPT 2"

    waiting = rest(api, "start_run", agent="fixer", instructions='CALL bounce {"FB": "r1"}')
    parked = poll(lambda: rest(api, "get_run", agent="fixer", run_id=waiting["run_id"]), ("waiting_for_approval",))
    [approval] = rest(api, "get_approvals")
    assert approval["approval_id"] == parked["approvals"][0]["approval_id"]
    assert approval["arguments"] == {"FB": "r1"}
    assert rest(api, "approve", approval_id=approval["approval_id"], note="via REST")["state"] == "approved"
    done = poll(lambda: rest(api, "get_run", agent="fixer", run_id=waiting["run_id"]), ("finished",))
    assert done["result"]["tool_calls"][0]["status"] == "completed"
    assert [kwargs for _, kwargs in network_jobs(base) if kwargs.get("commands") == ["show users"]]


def test_rest_routes_hide_what_other_jobs_and_the_host_hold(lab):
    _, _, api, _ = lab
    paths = httpx.get(f"{api}/openapi.json", timeout=30).json()["paths"]
    hermes = {path.split("/")[3] for path in paths if path.startswith("/api/hermes/")}
    assert {"start_run", "get_run", "approve", "deny", "get_approvals", "interrupt", "invoke"} <= hermes
    assert not hermes & HIDDEN, hermes & HIDDEN
    assert httpx.post(f"{api}/api/hermes/get_status/", json={}, timeout=30).status_code == 401  # no token


async def mcp_session(url, work):
    async with httpx.AsyncClient(
        headers={"Authorization": f"Bearer {MCP_TOKEN}"}, timeout=httpx.Timeout(30, read=120)
    ) as http:
        async with streamable_http_client(url, http_client=http) as (read, write, _):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return await work(session)


def test_mcp_lists_the_hermes_tools_with_annotations_and_runs_an_agent(lab):
    _, _, _, url = lab

    async def work(session):
        tools = {t.name.removeprefix("service_hermes__task_"): t for t in (await session.list_tools()).tools}

        async def call(task, **arguments):
            reply = await session.call_tool(f"service_hermes__task_{task}", arguments)
            result = reply.structuredContent[WORKER]
            assert not result["failed"], result["errors"]
            return result["result"]

        accepted = await call("start_run", agent="alpha", instructions="hello from mcp")
        deadline = time.time() + 60
        state = await call("get_run", agent="alpha", run_id=accepted["run_id"])
        while state["state"] != "finished" and time.time() < deadline:
            await asyncio.sleep(0.3)
            state = await call("get_run", agent="alpha", run_id=accepted["run_id"])
        return tools, state

    tools, state = asyncio.run(mcp_session(url, work))
    assert all(name.startswith("service_hermes__task_") for name in (t.name for t in tools.values()))
    assert {"start_run", "get_run", "interrupt", "approve", "deny", "get_approvals", "get_agents", "get_status"} <= set(
        tools
    )
    assert not set(tools) & (HIDDEN | {"invoke", "manage_agent", "schedule", "command"})
    start, read, stop, approve = (tools[n].annotations for n in ("start_run", "get_run", "interrupt", "approve"))
    assert (start.readOnlyHint, start.destructiveHint, start.openWorldHint) == (False, False, True)
    assert (read.readOnlyHint, read.idempotentHint) == (True, True)
    assert (stop.destructiveHint, stop.idempotentHint) == (True, True)
    assert approve.destructiveHint is True
    assert "NorFab" not in tools["start_run"].description
    assert state["result"]["response"] == "ECHO: hello from mcp"
