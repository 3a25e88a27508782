"""
The unit layer: pure logic with fakes, in seconds. No NorFab is started and
no Hermes module is imported: the hook and the fixture below fail a unit
module that imports Hermes or the worker's wiring when it loads, and a unit
test that asks for a live NorFab or imports them while it runs.
"""

import sys
from importlib.metadata import distribution
from typing import Any, Generator, Iterator, List

import pytest

HERMES_PACKAGES = set(distribution("hermes-agent").read_text("top_level.txt").split())
# fixtures of tests/conftest.py that start servers (NorFab, the scripted model)
LIVE_FIXTURES = {"model", "nf", "lab", "fleet"}
# worker modules that register NorFab tasks (process-global) or wire the Hermes runtime when imported
WIRING = (
    "norfab_hermes.worker.tasks",
    "norfab_hermes.worker.hermes_worker",
    "norfab_hermes.worker.host",
    "norfab_hermes.worker.operations",
)


def forbidden(modules: object) -> List[str]:
    """The Hermes and worker wiring modules among ``modules``."""
    return sorted(m for m in modules if m.split(".")[0] in HERMES_PACKAGES or m.startswith(WIRING))


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Generator[None, Any, Any]:
    """A unit module that imports Hermes or the worker's wiring when it loads fails to collect."""
    before = set(sys.modules)
    report = yield
    loaded = forbidden(set(sys.modules) - before)
    if loaded and isinstance(collector, pytest.Module):
        report.outcome = "failed"
        report.longrepr = f"{collector.nodeid} imports Hermes or the worker's wiring when it loads: {loaded[:5]}"
    return report


@pytest.fixture(autouse=True)
def unit_only(request: pytest.FixtureRequest) -> Iterator[None]:
    """A unit test starts no NorFab and imports no Hermes or NorFab task module while it runs."""
    live = sorted(set(request.fixturenames) & LIVE_FIXTURES)
    assert not live, f"unit tests use fakes, not {live}: a test that needs them belongs in tests/"
    before = set(sys.modules)
    yield
    loaded = forbidden(set(sys.modules) - before)
    assert not loaded, f"a unit test imported Hermes or the worker's wiring: {loaded[:5]}"
