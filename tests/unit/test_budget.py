"""Every run budget in one place: the limits an agent's run gets and what stops it."""

from types import SimpleNamespace

import pytest

from norfab_hermes.models import AgentDefinition, HermesInventory, StopReason
from norfab_hermes.worker.runs import budget as budget_module
from norfab_hermes.worker.runs.budget import JOB_TIMEOUT_MARGIN, Budget, Limits


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1_000_000.0

    def time(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(budget_module, "time", fake)
    return fake


def agent(**fields: object) -> AgentDefinition:
    return AgentDefinition.model_validate({"instructions": "You check.", **fields})


INVENTORY = HermesInventory(max_tool_calls=30, max_targets=20, max_repeated_calls=3)


def test_a_run_gets_the_agents_run_timeout_by_default():
    """Without a caller timeout or a job timeout the run gets the agent's run_timeout."""
    limits = Limits.of(agent(run_timeout=120), INVENTORY, max_turns=7, timeout=None, job=None)
    assert limits == Limits(seconds=120, max_turns=7, max_calls=30, max_targets=20, max_repeats=3)


def test_a_caller_may_ask_for_less_time_never_more():
    """A caller's timeout shortens the run budget but never extends it past run_timeout."""
    assert Limits.of(agent(run_timeout=120), INVENTORY, 7, timeout=30, job=None).seconds == 30
    assert Limits.of(agent(run_timeout=120), INVENTORY, 7, timeout=600, job=None).seconds == 120


def test_the_run_ends_before_the_callers_job_stops_waiting():
    """The run budget stays JOB_TIMEOUT_MARGIN under the caller's NorFab job timeout, and at least a second."""
    assert Limits.of(agent(), INVENTORY, 7, None, SimpleNamespace(timeout=60)).seconds == 60 - JOB_TIMEOUT_MARGIN
    assert Limits.of(agent(), INVENTORY, 7, None, SimpleNamespace(timeout=2)).seconds == 1.0


def test_the_agents_own_tool_limits_win_over_the_workers():
    """max_tool_calls and max_targets of the agent override the worker's; repeats come from the worker."""
    limits = Limits.of(agent(max_tool_calls=4, max_targets=2), INVENTORY, 7, None, None)
    assert (limits.max_calls, limits.max_targets, limits.max_repeats) == (4, 2, 3)


def test_the_clock_stops_the_run_past_its_budget(clock):
    """The run may go on until its budget is spent, then it stops with run_timeout."""
    spent = Budget(Limits(seconds=10, max_turns=5))
    clock.now += 10
    assert spent.clock() is None
    assert spent.remaining() == 0.0
    clock.now += 0.5
    assert spent.clock() == (StopReason.run_timeout, "run budget of 10s spent")


def test_remaining_counts_down_with_the_clock(clock):
    """remaining() is the budget left, never negative."""
    spent = Budget(Limits(seconds=10, max_turns=5))
    clock.now += 4
    assert spent.remaining() == 6
    clock.now += 100
    assert spent.remaining() == 0.0


def test_max_turns_is_exact():
    """Exactly max_turns model requests are admitted; the next stops the run with max_turns."""
    spent = Budget(Limits(seconds=60, max_turns=3))
    assert [spent.model_request() for _ in range(3)] == [None, None, None]
    assert spent.model_request() == (StopReason.max_turns, "model call budget of 3 spent")
    assert spent.model_requests == 3


def test_the_tool_call_budget_admits_max_calls():
    """max_calls different calls are admitted; the next stops the run with tool_budget."""
    spent = Budget(Limits(seconds=60, max_turns=5, max_calls=2))
    assert spent.tool_call("show", "a") is None
    assert spent.tool_call("show", "b") is None
    assert spent.tool_call("show", "c") == (StopReason.tool_budget, "the run's budget of 2 tool calls is spent")


def test_the_same_call_repeated_stops_the_run():
    """The same tool with the same arguments max_repeats times stops the run with repeated_call."""
    spent = Budget(Limits(seconds=60, max_turns=5, max_repeats=3))
    assert spent.tool_call("show", "a") is None
    assert spent.tool_call("show", "a") is None
    assert spent.tool_call("other", "a") is None  # another tool, same arguments: not a repeat
    assert spent.tool_call("show", "a") == (
        StopReason.repeated_call,
        "show was called 3 times with the same arguments; the run stops instead of looping",
    )


def test_devices_count_once_and_stop_the_run_past_the_budget():
    """Devices reached are counted once each; one past max_targets stops the run with tool_budget."""
    spent = Budget(Limits(seconds=60, max_turns=5, max_targets=2))
    assert spent.reached({"r1"}) is None
    assert spent.reached({"r1", "r2"}) is None
    assert spent.targets == {"r1", "r2"}
    assert spent.reached({"r3"}) == (StopReason.tool_budget, "the run touched 3 devices, over its budget of 2")
