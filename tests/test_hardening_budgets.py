"""
Finding 5: budgets that hold. A model that keeps calling tools is held to the
agent's model calls, tool calls and devices, a loop is broken, and runs
abandoned on a hung provider leave no threads or sockets behind. Each budget
is checked on the nornir worker: the jobs it received.
"""

import os
import time
import uuid

import pytest
from conftest import Lab, invoke, network_jobs, run

from norfab_hermes.testing.scenario import Scenario
from norfab_hermes.testing.scripted_model import ScriptedModel, ScriptedModelServer

pytestmark = pytest.mark.hardening

WORKER = "hermes-worker-1"
FB_SCHEMA = {"type": "object", "properties": {"FB": {"type": "string"}}, "required": ["FB"]}
CLOCK = {
    "input_schema": FB_SCHEMA,
    "norfab": {"service": "nornir", "task": "cli", "kwargs": {"commands": ["show clock"]}},
}
UPTIME = {
    "input_schema": FB_SCHEMA,
    "norfab": {"service": "nornir", "task": "cli", "kwargs": {"commands": ["show version"]}},
}
TOOLS = {"clock": CLOCK, "uptime": UPTIME}


def agent(**settings):
    return {"instructions": "You check devices.", "toolsets": ["norfab"], "tools": TOOLS, "run_timeout": 60, **settings}


AGENTS = {
    "turns": agent(hermes={"agent": {"max_turns": 5}}),
    # Hermes' own subagents work inside the run: their model calls count against its max_turns
    "lead": agent(toolsets=["norfab", "delegation"], hermes={"agent": {"max_turns": 4}}),
    "frugal": agent(max_tool_calls=3),
    "local": agent(max_targets=1),
}


def calls(*steps):
    return [{"call": tool, "args": {"FB": host}} for tool, host in steps]


RULES = [
    # never stops calling tools, never the same call twice in a row
    {"match": "ALTERNATE", "steps": calls(*[("clock", "r1"), ("uptime", "r1"), ("clock", "r2"), ("uptime", "r2")] * 3)},
    {"match": "LOOP", "steps": calls(*[("clock", "r1")] * 8)},
    {"match": "SPREAD", "steps": calls(("clock", "r1"), ("clock", "r2"), ("clock", "r3"), ("uptime", "r1"))},
    {
        "match": "SPLIT",
        "steps": [{"call": "delegate_task", "args": {"goal": "ALTERNATE for the lead"}}, {"say": "done"}],
    },
]


@pytest.fixture(scope="module")
def model():
    with ScriptedModelServer(ScriptedModel(Scenario(RULES))) as server:
        yield server


LAB = Lab(workers={WORKER: AGENTS}, hosts=("r1", "r2", "r3"))


def cli_jobs(base):
    return [kwargs for task, kwargs in network_jobs(base) if task == "cli"]


def test_max_turns_is_exact(lab, model):
    nf, base = lab
    before, jobs_before = len(model.model.completions()), len(cli_jobs(base))
    result = invoke(nf, "turns", "ALTERNATE 1")
    model_calls = len(model.model.completions()) - before
    assert model_calls <= 5, f"{model_calls} model calls for max_turns 5"
    assert len(result["tool_calls"]) <= 4
    assert len(cli_jobs(base)) - jobs_before == len(result["tool_calls"])
    assert result["stop_reason"] == "max_turns"


def test_the_same_call_repeated_stops_the_run(lab):
    nf, base = lab
    jobs_before = len(cli_jobs(base))
    result = invoke(nf, "turns", "LOOP 1")
    assert result["stop_reason"] == "repeated_call"
    assert any("clock was called 3 times with the same arguments" in w for w in result["warnings"])
    statuses = [c["status"] for c in result["tool_calls"]]
    assert statuses[:2] == ["completed", "completed"]
    assert set(statuses[2:]) == {"refused"}
    assert len(cli_jobs(base)) - jobs_before == 2, "the refused repeat reached the nornir worker"


def test_tool_calls_per_run_are_bounded(lab):
    nf, base = lab
    jobs_before = len(cli_jobs(base))
    result = invoke(nf, "frugal", "ALTERNATE 2")
    assert result["stop_reason"] == "tool_budget"
    assert any("budget of 3 tool calls is spent" in w for w in result["warnings"])
    assert len(cli_jobs(base)) - jobs_before == 3


def test_devices_touched_per_run_are_bounded(lab):
    nf, base = lab
    jobs_before = len(cli_jobs(base))
    result = invoke(nf, "local", "SPREAD 1")
    assert result["stop_reason"] == "tool_budget"
    assert any("touched 2 devices, over its budget of 1" in w for w in result["warnings"])
    # the call that crossed the budget ran (a call's devices are known from its result); none after it
    assert [job["FB"] for job in cli_jobs(base)[jobs_before:]] == ["r1", "r2"]


def test_runs_abandoned_on_a_hung_provider_leave_nothing_behind(lab, model):
    nf, _ = lab

    def usage():
        status = run(nf.client, "get_status")["result"]
        return status["threads"], status["open_files"]

    model.model.hang_next(1)  # warm up: the first abandoned run may start lazily grown pools
    assert invoke(nf, "turns", "warm up", timeout=2)["stop_reason"] == "run_timeout"
    time.sleep(3)
    baseline = usage()
    model.model.hang_next(3)
    for i in range(3):
        assert invoke(nf, "turns", f"hung {i}", timeout=2)["stop_reason"] == "run_timeout"
    deadline = time.time() + 20
    while usage() > (baseline[0] + 1, baseline[1] + 2) and time.time() < deadline:
        time.sleep(1)
    threads, files = usage()
    assert threads <= baseline[0] + 1, (baseline, (threads, files))
    assert files <= baseline[1] + 2, (baseline, (threads, files))


def provider_requests(model, since):
    """Every chat completion the provider received since ``since`` (session titles included)."""
    return [r for r in model.model.requests if r["time"] >= since and r["path"].endswith("/chat/completions")]


def test_finding_5_every_request_the_worker_pays_for_counts(lab, model):
    nf, _ = lab
    started = time.time()
    result = invoke(nf, "turns", f"ALTERNATE {uuid.uuid4().hex[:6]}")
    assert len(provider_requests(model, started)) <= 5, "the provider got more requests than max_turns 5"
    assert result["usage"]["api_calls"] == len(provider_requests(model, started))
    assert result["stop_reason"] == "max_turns"


def test_finding_5_subagents_spend_the_runs_model_calls(lab, model):
    nf, base = lab
    started, jobs_before = time.time(), len(cli_jobs(base))
    result = invoke(nf, "lead", f"SPLIT {uuid.uuid4().hex[:6]}")
    assert len(provider_requests(model, started)) <= 4, "a subagent's requests went past the run's max_turns 4"
    assert len(cli_jobs(base)) > jobs_before, "the subagent made no tool call: nothing was tried"
    assert result["stop_reason"] == "max_turns"


@pytest.mark.parametrize("runs", [4, 8])
def test_finding_6_hung_runs_at_once_free_their_threads_and_sockets(lab, model, runs):
    nf, _ = lab
    pid = run(nf.client, "get_status")["result"]["pid"]

    def usage():
        """Threads and sockets of the worker process (NorFab's own job store files come and go)."""
        links = [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
        return len(os.listdir(f"/proc/{pid}/task")), sum(link.startswith("socket:") for link in links)

    def hang_at_once():
        model.model.hang_next(runs)
        futures = [
            nf.client.submit_job(
                "hermes",
                "invoke",
                kwargs={"agent": "turns", "instructions": f"hung {i}", "timeout": 3},
                workers=WORKER,
                timeout=60,
            )
            for i in range(runs)
        ]
        assert all(f.result(timeout=60)[WORKER]["result"]["stop_reason"] == "run_timeout" for f in futures)

    hang_at_once()  # NorFab's job pool and the gateway's turn pool grow to this many threads and keep them
    time.sleep(3)
    baseline = usage()
    hang_at_once()
    hang_at_once()
    # a stuck turn keeps a thread and a socket per run: two more rounds would add 2 * runs of each;
    # the pools may still add a thread or two under load, never one per run
    deadline = time.time() + 20
    while max(usage()[0] - baseline[0], usage()[1] - baseline[1]) >= runs and time.time() < deadline:
        time.sleep(1)
    threads, sockets = usage()
    # the provider still holds every request open: only the worker can let go
    assert threads - baseline[0] < runs, (baseline, (threads, sockets))
    assert sockets - baseline[1] < runs, (baseline, (threads, sockets))
