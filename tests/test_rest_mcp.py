"""
The agents through NorFab's own REST (fastapi) and MCP (fastmcp) services,
driven with an HTTP client and the mcp package's own client: start a run,
poll it to completion, approve what it waits for - and see only the hermes
tasks meant for such clients, with honest annotations.
"""

import asyncio
import contextlib
import time

import httpx
import pytest
from conftest import eventually, free_port, hermes_worker, network, network_jobs, norfab
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from norfab_hermes.identity import mint
from norfab_hermes.identity.keys import new_key
from norfab_hermes.identity.signatures import KeyFileSigner

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


@contextlib.contextmanager
def rest_and_mcp(url, base, **settings):
    """A hermes worker (``settings`` in its inventory) with NorFab's REST and MCP services in front of it."""
    workers, files = network(["r1"], users={WORKER: hermes_worker(url, AGENTS, **settings)})
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
        api = f"http://127.0.0.1:{api_port}"
        # NorFab's REST worker adds its routes as it discovers the services: FastAPI's schema made meanwhile
        # fails (a 500 of its own); what an operator reads is the schema once they are all there
        eventually(lambda: hermes_routes(api), "NorFab's REST service to list the hermes routes")
        yield nf, base, api, f"http://127.0.0.1:{mcp_port}/mcp"


def hermes_routes(api):
    """The hermes tasks NorFab's REST service lists, or none while it cannot say (its schema fails)."""
    reply = httpx.get(f"{api}/openapi.json", timeout=30)
    paths = reply.json()["paths"] if reply.status_code == 200 else {}
    return {path.split("/")[3] for path in paths if path.startswith("/api/hermes/")}


@pytest.fixture(scope="module")
def lab(model, tmp_path_factory):
    with rest_and_mcp(model.base_url, tmp_path_factory.mktemp("lab")) as running:
        yield running


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
    hermes = hermes_routes(api)
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


# ------------------------------------------------------------------ identity on

OPERATOR_ROLES = {"alice": {"*": ["operator"]}, "bob": {"*": ["approver"]}}


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    folder = tmp_path_factory.mktemp("keys")
    for name in OPERATOR_ROLES:
        new_key(folder / name, name)
    return {name: KeyFileSigner.load(folder / name) for name in OPERATOR_ROLES}


@pytest.fixture(scope="module")
def signed_lab(model, keys, tmp_path_factory):
    """REST and MCP in front of a hermes worker with operators (alice asks, bob approves)."""
    operators = {
        n: {"keys": [keys[n].path.with_suffix(".pub").read_text()], "roles": r} for n, r in OPERATOR_ROLES.items()
    }
    with rest_and_mcp(model.base_url, tmp_path_factory.mktemp("signed"), operators=operators) as running:
        yield running


def proof(signer, task, via, subject=None, **kwargs):
    """A proof for ``task`` with exactly ``kwargs``, sent by the fastapi or fastmcp worker's NorFab client."""
    return mint(signer, task, [WORKER], kwargs, f"{via}-worker-1-NFPClient", subject)


def rest_raw(url, task, **body):
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {API_TOKEN}"}, timeout=90) as http:
        reply = http.post(f"/api/hermes/{task}/", json={"workers": WORKER, **body})
    reply.raise_for_status()
    return reply.json()[WORKER]


def signed_rest(url, signer, task, subject=None, **kwargs):
    result = rest_raw(url, task, proof=proof(signer, task, "fastapi", subject, **kwargs), **kwargs)
    assert not result["failed"], result["errors"]
    return result["result"]


def shows_users(base):
    return len([k for _, k in network_jobs(base) if k.get("commands") == ["show users"]])


def test_rest_with_identity_invokes_and_approves_only_with_proofs(signed_lab, keys):
    nf, base, api, _ = signed_lab
    alice, bob = keys["alice"], keys["bob"]
    refused = rest_raw(api, "invoke", agent="alpha", instructions="no key")
    assert refused["failed"] and "invoke needs a proof" in refused["errors"][0]
    reply = signed_rest(api, alice, "invoke", agent="alpha", instructions="hello over REST")
    assert reply["response"] == "ECHO: hello over REST"

    waiting = signed_rest(api, alice, "start_run", agent="fixer", instructions='CALL bounce {"FB": "r1"}')
    poll(lambda: signed_rest(api, alice, "get_run", agent="fixer", run_id=waiting["run_id"]), ("waiting_for_approval",))
    [approval] = signed_rest(api, bob, "get_approvals")
    digest = approval["change_digest"] or approval["arguments_digest"]
    before = shows_users(base)
    # the REST token alone decides nothing: no proof, or alice's own (four eyes), is refused
    for attempt in (
        rest_raw(api, "approve", approval_id=approval["approval_id"]),
        rest_raw(
            api,
            "approve",
            approval_id=approval["approval_id"],
            proof=proof(alice, "approve", "fastapi", digest, approval_id=approval["approval_id"]),
        ),
    ):
        assert attempt["failed"] and attempt["result"]["code"] == "not_allowed", attempt
    assert signed_rest(api, bob, "get_approvals")[0]["state"] == "pending" and shows_users(base) == before
    decided = signed_rest(api, bob, "approve", digest, approval_id=approval["approval_id"], note="via REST")
    assert (decided["state"], decided["decided_by"]) == ("approved", "bob")
    done = poll(lambda: signed_rest(api, alice, "get_run", agent="fixer", run_id=waiting["run_id"]), ("finished",))
    assert done["result"]["tool_calls"][0]["status"] == "completed" and shows_users(base) == before + 1


def test_mcp_with_identity_runs_and_approves_only_with_proofs(signed_lab, keys):
    _, base, _, url = signed_lab
    alice, bob = keys["alice"], keys["bob"]

    async def work(session):
        async def call(task, signer=None, subject=None, **arguments):
            if signer is not None:
                arguments["proof"] = proof(signer, task, "fastmcp", subject, **arguments)
            reply = await session.call_tool(f"service_hermes__task_{task}", arguments)
            return reply.structuredContent[WORKER]

        async def ok(task, signer, subject=None, **arguments):
            result = await call(task, signer, subject, **arguments)
            assert not result["failed"], result["errors"]
            return result["result"]

        async def until(agent, run_id, states):
            deadline = time.time() + 60
            state = await ok("get_run", alice, agent=agent, run_id=run_id)
            while state["state"] not in states and time.time() < deadline:
                await asyncio.sleep(0.3)
                state = await ok("get_run", alice, agent=agent, run_id=run_id)
            return state

        unsigned = await call("start_run", agent="alpha", instructions="no key")
        started = await ok("start_run", alice, agent="alpha", instructions="hello from mcp")
        answered = await until("alpha", started["run_id"], ("finished",))
        waiting = await ok("start_run", alice, agent="fixer", instructions='CALL bounce {"FB": "r1"}')
        await until("fixer", waiting["run_id"], ("waiting_for_approval",))
        [approval] = [a for a in await ok("get_approvals", bob) if a["run_id"] == waiting["run_id"]]
        digest = approval["change_digest"] or approval["arguments_digest"]
        before = shows_users(base)
        # a model holding the MCP token but no approver's key cannot approve
        model_tries = await call("approve", approval_id=approval["approval_id"])
        still = [a["state"] for a in await ok("get_approvals", bob) if a["approval_id"] == approval["approval_id"]]
        jobs_meanwhile = shows_users(base)
        decided = await ok("approve", bob, digest, approval_id=approval["approval_id"])
        done = await until("fixer", waiting["run_id"], ("finished",))
        return unsigned, answered, model_tries, still, before, jobs_meanwhile, decided, done

    unsigned, answered, model_tries, still, before, meanwhile, decided, done = asyncio.run(mcp_session(url, work))
    assert unsigned["failed"] and "start_run needs a proof" in unsigned["errors"][0]
    assert answered["result"]["response"] == "ECHO: hello from mcp"
    assert model_tries["failed"] and "approve needs a proof" in model_tries["errors"][0]
    assert still == ["pending"] and meanwhile == before
    assert (decided["state"], decided["decided_by"]) == ("approved", "bob")
    assert done["result"]["tool_calls"][0]["status"] == "completed" and shows_users(base) == before + 1
