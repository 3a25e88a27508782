"""Token and cost budgets: a run's max_tokens and an agent's day, counted per answer, warned at 50/75/90 %."""

from typing import Dict, Tuple

import pytest

from norfab_hermes.models import AgentDefinition, HermesInventory, ModelPrice, StopReason
from norfab_hermes.worker.runs.budget import Budget, DailyLimits, DailyUsage, Limits, cost_of, crossed

PRICES = {"m1": ModelPrice(input=2.0, output=8.0)}


class Ledger:
    """The run records' daily usage, in memory."""

    def __init__(self) -> None:
        self.days: Dict[Tuple[str, str], Tuple[int, float]] = {}

    def spent(self, agent: str, day: str) -> Tuple[int, float]:
        return self.days.get((agent, day), (0, 0.0))

    def add_usage(self, agent: str, day: str, tokens: int, cost: float) -> Tuple[int, float]:
        before = self.spent(agent, day)
        self.days[(agent, day)] = (before[0] + tokens, before[1] + cost)
        return self.days[(agent, day)]


@pytest.mark.parametrize(
    "before, after, expected", [(0, 49, None), (0, 50, 50), (40, 80, 75), (10, 95, 90), (90, 99, None), (60, 74, None)]
)
def test_the_highest_level_passed_is_the_warning(before, after, expected):
    assert crossed(before, after, 100) == expected


def test_no_limit_never_warns():
    assert crossed(0, 10**9, None) is None


def test_a_request_costs_its_tokens_at_the_models_price():
    """USD per million tokens, prompt and completion priced apart; an unpriced model has no cost."""
    assert cost_of(PRICES, "m1", 1_000_000, 500_000) == pytest.approx(6.0)
    assert cost_of(PRICES, "other", 10, 10) is None


def test_a_run_gets_the_agents_token_budgets_and_the_workers_default():
    definition = AgentDefinition(instructions="x", daily_tokens=1000, daily_cost_usd=2.0, prices=PRICES)
    limits = Limits.of(definition, HermesInventory(max_tokens=5000), 5, None, None)
    assert (limits.max_tokens, limits.daily) == (5000, DailyLimits(1000, 2.0, PRICES))
    assert (
        Limits.of(AgentDefinition(instructions="x", max_tokens=10), HermesInventory(), 5, None, None).max_tokens == 10
    )
    assert Limits.of(AgentDefinition(instructions="x"), HermesInventory(), 5, None, None).daily is None


def test_a_cost_budget_needs_prices():
    with pytest.raises(ValueError, match="daily_cost_usd needs prices"):
        AgentDefinition(instructions="x", daily_cost_usd=1.0)


def test_a_request_that_would_pass_max_tokens_is_refused_after_warnings():
    """Each answer counts; 50 and 75 % warn once each; the request whose estimate would pass the budget is not sent."""
    budget = Budget(Limits(seconds=60, max_turns=10, max_tokens=1000))
    budget.expect("m1", 300)
    assert budget.model_request() is None
    assert budget.model_usage("m1", 280, 20) == []
    budget.expect("m1", 300)
    assert budget.model_request() is None
    assert budget.model_usage("m1", 300, 20) == ["50 % of the run's token budget spent: 620 of 1000"]
    budget.expect("m1", 150)
    assert budget.model_request() is None
    assert budget.model_usage("m1", 150, 10) == ["75 % of the run's token budget spent: 780 of 1000"]
    budget.expect("m1", 300)
    reason, message = budget.model_request()
    assert reason == StopReason.token_budget
    assert message == "token budget of 1000 spent: 780 used, the next request needs about 300"
    assert budget.model_requests == 3, "a refused request is not counted as made"


def test_without_max_tokens_tokens_are_only_counted():
    budget = Budget(Limits(seconds=60, max_turns=10))
    budget.expect("m1", 10**9)
    assert budget.model_request() is None and budget.model_usage("m1", 10**6, 10**6) == []


def test_a_day_warns_once_per_level_then_ends_on_the_first_refused_request():
    """The agent's runs share the day; a request the rest of the day cannot hold ends the day for every run."""
    usage, limits = DailyUsage(Ledger()), DailyLimits(tokens=1000, cost_usd=None)
    first, second = (
        Budget(Limits(60, 10, daily=limits), "alpha", usage),
        Budget(Limits(60, 10, daily=limits), "alpha", usage),
    )
    assert first.model_usage("m1", 500, 10)[0].startswith(
        "agent 'alpha' spent 50 % of its daily budget: 510 of 1000 tokens"
    )
    assert second.model_usage("m1", 10, 0) == [], "a level is told once a day, whichever run passes it"
    second.expect("m1", 600)
    reason, message = second.model_request()
    assert reason == StopReason.daily_budget and "spent 520 of its 1000 daily tokens" in message
    assert usage.refusal("alpha", limits) is not None, "no new run starts that day"
    assert usage.refusal("alpha", DailyLimits(tokens=5000, cost_usd=None)) is None, (
        "a bigger budget opens the day again"
    )
    assert usage.refusal("beta", limits) is None


def test_a_cost_budget_counts_priced_answers_and_refuses_unpriced_models():
    usage, limits = DailyUsage(Ledger()), DailyLimits(tokens=None, cost_usd=1.0, prices=PRICES)
    assert (
        usage.add("alpha", limits, "m1", 250_000, 0)
        == "agent 'alpha' spent 50 % of its daily budget: 250000 tokens, 0.5000 of 1.0 USD"
    )
    assert usage.refusal("alpha", limits, "m1", 100_000) is None
    assert "has no price" in usage.refusal("alpha", limits, "m2", 10)
    status = usage.status("alpha", limits)
    assert (status.cost_usd, status.percent) == (0.5, 50.0) and status.warning.startswith("50 % of the daily budget")
