"""
Schedules that compare, on the lab's core1 (a FakeNOS model whose PARTNER-X
peering goes down and comes back): each run is given the previous run's
finding and judged against the schedule's acceptance criteria on the device
output it received, ``ok``, then ``regressed`` when the output changes and
``recovered`` when it comes back; an observation period ends on its own.
"""

import json
import time
from pathlib import Path

import pytest

from norfab_hermes.eval.lab import copy_lab, scripted_model, settings
from norfab_hermes.testing.embedded import started
from norfab_hermes.testing.scenario import Scenario

LAB = Path(__file__).resolve().parents[1] / "examples" / "lab"
WORKER = "hermes-worker-1"
PROMPT = "Watch the PARTNER-X peering on core1"
RULES = [
    {
        "match": "(?i)watch the PARTNER-X peering on (?P<device>\\S+)",
        "steps": [
            {"call": "bgp_summary", "args": {"FB": "{{ device }}"}},
            {"say": "PARTNER-X on {{ device }}: {{ grep('bgp_summary', '^10\\\\.250\\\\.0\\\\.2') | join }}"},
        ],
    }
]
UP = {"tool": "bgp_summary", "device": "core1", "match": "^10\\.250\\.0\\.2\\s.*\\s\\d+\\s*$", "name": "PARTNER-X up"}


@pytest.fixture(scope="module")
def core_lab(tmp_path_factory):
    spec = settings(LAB)
    spec.topology = [w for w in spec.topology if (w if isinstance(w, str) else next(iter(w))) != "hermes-worker-2"]
    with scripted_model() as model:
        model.scenario = Scenario(RULES)
        inventory = copy_lab(LAB, tmp_path_factory.mktemp("compare") / "lab", spec)
        with started(inventory, spec.workers()) as nf:
            yield nf, model


def hermes(nf, task, **kwargs):
    reply = nf.client.run_job("hermes", task, kwargs=kwargs, workers=[WORKER], timeout=120)
    result = reply[WORKER]
    assert not result["failed"], result["errors"]
    return result["result"]


def core1(nf, command):
    reply = nf.client.run_job("nornir", "cli", kwargs={"FL": ["core1"], "commands": [command]}, timeout=60)
    assert not any(r["failed"] for r in reply.values()), reply


def run_now(nf, name, count):
    hermes(nf, "schedule", agent="noc", action="run", schedule_id=name)
    deadline = time.time() + 90
    while time.time() < deadline:
        runs = hermes(nf, "schedule", agent="noc", action="history", schedule_id=name, limit=50)["history"]
        if len(runs) >= count:
            return runs[0]
        time.sleep(0.5)
    raise AssertionError(f"run {count} of {name} did not land in its history")


def test_runs_are_ok_then_regressed_when_the_output_changes_and_recovered_when_it_comes_back(core_lab):
    nf, model = core_lab
    definition = {"name": "partner-x", "prompt": PROMPT, "schedule": "every 1h", "compare": True, "criteria": [UP]}
    [created] = hermes(nf, "schedule", agent="noc", action="create", definition=definition)["schedules"]
    assert created["compare"] is True
    assert created["criteria"][0]["name"] == "PARTNER-X up"

    core1(nf, "clear ip bgp 10.250.0.2")
    first = run_now(nf, "partner-x", 1)
    assert first["status"] == "ok", first
    assert first["criteria"][0]["met"], first
    assert first["artifacts"][0]["device"] == "core1"
    assert first["artifacts"][0]["command"] == "show ip bgp summary"

    core1(nf, "lab reset")  # the session goes down again: Idle (PfxCt)
    second = run_now(nf, "partner-x", 2)
    assert second["status"] == "regressed", second
    assert not second["criteria"][0]["met"], second
    assert "Idle (PfxCt)" in second["response"]
    # the second run was given the first run's finding
    asked = [r for r in model.completions() if PROMPT in json.dumps(r["messages"][-1])][-1]
    assert first["response"] in json.dumps(asked["messages"][-1])
    assert "Status:** ok" in json.dumps(asked["messages"][-1])

    core1(nf, "clear ip bgp 10.250.0.2")
    third = run_now(nf, "partner-x", 3)
    assert third["status"] == "recovered", third
    assert third["criteria"][0]["met"], third
    hermes(nf, "schedule", agent="noc", action="remove", schedule_id="partner-x")


def test_an_observation_period_ends_on_its_own(core_lab):
    nf, _ = core_lab
    definition = {"name": "short-watch", "prompt": PROMPT, "schedule": "* * * * * */2", "observe_for": "5s"}
    [created] = hermes(nf, "schedule", agent="noc", action="create", definition=definition)["schedules"]
    assert created["until"]
    deadline = time.time() + 60
    while time.time() < deadline:
        [listed] = hermes(nf, "schedule", agent="noc", action="list")["schedules"]
        if listed["state"] == "completed":
            break
        time.sleep(0.5)
    assert listed["state"] == "completed", listed
    ran = len(hermes(nf, "schedule", agent="noc", action="history", schedule_id="short-watch", limit=100)["history"])
    time.sleep(5)
    assert (
        len(hermes(nf, "schedule", agent="noc", action="history", schedule_id="short-watch", limit=100)["history"])
        <= ran + 1
    )
    assert ran >= 1
    hermes(nf, "schedule", agent="noc", action="remove", schedule_id="short-watch")
