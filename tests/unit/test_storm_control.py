"""Storm control: a repeated dedupe_key gets the earlier run; an agent starts at most its runs per minute."""

import pytest

from norfab_hermes.errors import Busy
from norfab_hermes.worker.runs import storm as storm_module
from norfab_hermes.worker.runs.storm import Storm


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def time(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch):
    fake = Clock()
    monkeypatch.setattr(storm_module, "time", fake)
    return fake


def start(storm, run_id, agent="alpha", key=None, window=60.0, per_minute=None):
    """Admit one request; the run id it gets (its own when new)."""
    with storm.admission(agent, key, window, per_minute) as ticket:
        if ticket.earlier is not None:
            return ticket.earlier
        ticket.started(run_id)
        return run_id


def test_a_repeated_key_gets_the_earlier_run_within_the_window(clock):
    storm = Storm("w1")
    assert start(storm, "r1", key="INC-1") == "r1"
    clock.now += 59
    assert start(storm, "r2", key="INC-1") == "r1"
    assert start(storm, "r3", key="INC-2") == "r3"
    assert start(storm, "r4", agent="beta", key="INC-1") == "r4", "keys are the agent's own"
    clock.now += 2
    assert start(storm, "r5", key="INC-1") == "r5", "past the window a key starts a new run"


def test_a_window_of_zero_never_deduplicates(clock):
    storm = Storm("w1")
    assert [start(storm, f"r{n}", key="K", window=0) for n in range(2)] == ["r0", "r1"]


def test_after_a_restart_the_key_is_found_in_the_records(clock):
    asked = []

    def recorded(agent, key, since):
        asked.append((agent, key, since))
        return "old-run"

    assert start(Storm("w1", recorded), "r1", key="INC-1", window=300) == "old-run"
    assert asked == [("alpha", "INC-1", 700.0)]


def test_an_agent_starts_at_most_its_runs_per_minute(clock):
    storm = Storm("w1")
    assert [start(storm, f"r{n}", per_minute=2) for n in range(2)] == ["r0", "r1"]
    with pytest.raises(
        Busy, match="started 2 runs in the last minute, its max_runs_per_minute on worker 'w1'; retry in 60s"
    ):
        start(storm, "r2", per_minute=2)
    assert start(storm, "r2", agent="beta", per_minute=2) == "r2", "the cap is per agent"
    clock.now += 60.5
    assert start(storm, "r3", per_minute=2) == "r3"


def test_duplicates_and_refused_requests_do_not_count(clock):
    storm = Storm("w1")
    assert start(storm, "r1", key="K", per_minute=1) == "r1"
    assert start(storm, "r2", key="K", per_minute=1) == "r1", "a duplicate is answered even at the cap"
    with pytest.raises(RuntimeError):
        with storm.admission("beta", None, 60, 1):
            raise RuntimeError("the run could not be accepted")
    assert start(storm, "r3", agent="beta", per_minute=1) == "r3"
