"""
A bill you can cap: a run's max_tokens and an agent's daily token and cost
budgets, counted from the provider's usage of every model answer. Warnings
come first (job events, get_status), then a request that would pass the
budget is never sent: the run stops with its own stop reason, and a
schedule of an agent whose day is spent records a skipped run instead of
calling the model.
"""

import time

import pytest
from conftest import Lab, ok, run

from norfab_hermes.testing.scenario import Scenario
from norfab_hermes.testing.scripted_model import ScriptedModel, ScriptedModelServer

WORKER = "hermes-worker-1"
MODEL = {"model": {"default": "alpha-model"}}


def todo(n):
    return {"call": "todo", "args": {"todos": [{"id": str(n), "content": f"step {n}", "status": "pending"}]}}


# a model that plans ten steps, one tool round each: ten model requests unless a budget stops it
RULES = [{"match": "PLAN", "steps": [todo(n) for n in range(10)] + [{"say": "planned"}]}]
AGENTS = {
    "meter": {"instructions": "You plan.", "toolsets": ["todo"], "hermes": MODEL},
    "capped": {"instructions": "You plan.", "toolsets": ["todo"], "hermes": MODEL, "max_tokens": 3000},
    "daily": {"instructions": "You watch.", "hermes": MODEL, "daily_tokens": 3000},
    "priced": {
        "instructions": "You watch.",
        "hermes": MODEL,
        "daily_cost_usd": 1.0,
        "prices": {"alpha-model": {"input": 1000.0, "output": 1000.0}},  # USD per million tokens: 0.1 cent a token
    },
}


@pytest.fixture(scope="module")
def model():
    """The scripted model that plans; the lab's agents use it."""
    with ScriptedModelServer(ScriptedModel(Scenario(RULES)), model_ids=["alpha-model"]) as server:
        yield server


LAB = Lab(workers={WORKER: AGENTS})


def requests_with(model, text):
    return [r for r in model.model.completions() if text in str(r["messages"])]


def budget_of(nf, agent):
    return ok(run(nf.client, "get_status", agent=agent))["budgets"][agent]


def test_a_token_budget_warns_then_stops_the_run_before_it_is_passed(nf, model):
    free = ok(run(nf.client, "invoke", job_timeout=120, agent="meter", instructions="PLAN 1"))
    assert free["stop_reason"] == "completed"
    assert free["usage"]["total_tokens"] > 3000, "the plan must cost more than the capped agent's budget"

    result = ok(run(nf.client, "invoke", job_timeout=120, agent="capped", instructions="PLAN 2"))
    assert result["stop_reason"] == "token_budget"
    assert any("token budget of 3000 spent" in w for w in result["warnings"])
    # no request went out that the budget did not hold: the provider's count stays within it
    assert result["usage"]["total_tokens"] <= 3000
    assert len(requests_with(model, "PLAN 2")) == result["usage"]["api_calls"] < free["usage"]["api_calls"]
    messages = [e["message"] for e in ok(run(nf.client, "get_run", agent="capped", run_id=result["run_id"]))["events"]]
    warned = [(i, level(m)) for i, m in enumerate(messages) if "of the run's token budget spent" in m]
    stopped = next(i for i, m in enumerate(messages) if "stopping: token budget of 3000 spent" in m)
    assert warned, messages
    assert [lvl for _, lvl in warned] == sorted({lvl for _, lvl in warned}), "each level is told once, in order"
    assert warned[-1][0] < stopped, "the warnings come before the stop"


def level(message):
    """The percentage a budget warning names (50, 75 or 90)."""
    found = int(message.split(" %")[0].split()[-1])
    assert found in (50, 75, 90), message
    return found


def test_a_daily_budget_counts_schedules_warns_and_then_skips_a_schedule(nf, model):
    definition = {"name": "watch", "prompt": "WATCH check the core", "schedule": "every 1h"}
    ok(run(nf.client, "schedule", agent="daily", action="create", definition=definition))
    ok(run(nf.client, "schedule", agent="daily", action="run", schedule_id="watch"))
    history = wait_for_history(nf, "daily", "watch", 1)
    assert history[0]["status"] == "ok"
    scheduled = ok(run(nf.client, "get_run", agent="daily", run_id=history[0]["run_id"]))["result"]["usage"]
    assert budget_of(nf, "daily")["tokens"] == scheduled["total_tokens"] > 0, "the scheduled run counts"

    results = []
    while not results or results[-1]["stop_reason"] != "daily_budget":
        assert len(results) < 8, [r["stop_reason"] for r in results]
        results.append(
            ok(run(nf.client, "invoke", job_timeout=120, agent="daily", instructions=f"look {len(results)}"))
        )
    assert {r["stop_reason"] for r in results[:-1]} == {"completed"}
    assert any("daily budget spent" in w for w in results[-1]["warnings"])
    spent = budget_of(nf, "daily")
    assert spent["tokens"] <= 3000, "no request went out that the daily budget did not hold"
    assert spent["percent"] >= 75 and "% of the daily budget spent" in spent["warning"]
    warned = [
        level(e["message"])
        for r in results[:-1]
        for e in ok(run(nf.client, "get_run", agent="daily", run_id=r["run_id"]))["events"]
        if "of its daily budget" in e["message"]
    ]
    assert warned and warned == sorted(set(warned)), "warned before the budget ran out, each level once"

    # the day is over for the agent: a schedule records a skipped run and the model is not asked
    asked = len(model.model.completions())
    ok(run(nf.client, "schedule", agent="daily", action="run", schedule_id="watch"))
    history = wait_for_history(nf, "daily", "watch", 2)
    assert history[0]["status"] == "skipped"
    assert "daily" in history[0]["warnings"][0] and "model was not called" in history[0]["note"]
    assert len(model.model.completions()) == asked
    refused = run(nf.client, "invoke", agent="daily", instructions="one more")
    assert refused["failed"] and refused["result"]["code"] == "over_budget"
    assert len(model.model.completions()) == asked


def test_a_cost_budget_holds_with_the_agents_prices(nf, model):
    first = ok(run(nf.client, "invoke", job_timeout=120, agent="priced", instructions="first look"))
    assert first["stop_reason"] == "completed"
    spent = budget_of(nf, "priced")
    # one request of some 600 tokens at 0.1 cent a token: over half of the 1 USD day, under all of it
    assert 0.5 <= spent["cost_usd"] < 1.0 and spent["cost_usd"] == pytest.approx(spent["tokens"] / 1000)
    second = ok(run(nf.client, "invoke", job_timeout=120, agent="priced", instructions="second look"))
    assert second["stop_reason"] == "daily_budget" and second["usage"]["api_calls"] == 0
    assert not requests_with(model, "second look")


def wait_for_history(nf, agent, schedule, count, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        history = ok(run(nf.client, "schedule", agent=agent, action="history", schedule_id=schedule))["history"]
        if len(history) >= count:
            return history
        time.sleep(0.3)
    raise AssertionError(f"schedule {schedule} has {len(history)} runs, not {count}")
