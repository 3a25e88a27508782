"""The eval's jobs of work that carries over: earlier requests, watches, handovers, incident notes (no NorFab)."""

import pytest

from norfab_hermes.eval.models import Before, Job, RunData
from norfab_hermes.eval.scoring import carried

TRUTH = {"verdict": {"says": "x", "require": ["x"]}}


def job(**fields):
    return Job(id="99-test", title="t", request="r", agent="noc", truth=TRUTH, **fields)


def run(**fields):
    return RunData(job="99-test", repeat=1, model="m", agent="noc", worker="w", **fields)


def test_an_earlier_request_names_another_job_or_a_request_of_its_own():
    assert Before(job="01-customer-reachability").job
    assert Before(request="Is core1 up?").request
    for fields in ({}, {"job": "01", "request": "both"}):
        with pytest.raises(ValueError, match="either 'job'"):
            Before(**fields)


def test_a_watch_must_end_on_the_expected_status():
    watch = job(watch={"runs": 2}, expect={"status": "regressed"})
    assert carried(watch, run(status="regressed")) == []
    assert carried(watch, run(status="ok")) == ["the last scheduled run is ok, expected regressed"]
    assert carried(watch, run()) == ["the last scheduled run is missing, expected regressed"]


def test_a_handover_must_cite_every_earlier_session_and_run():
    handover = job(handover={"since": "2h"}, expect={"references": True})
    assert carried(handover, run(references=["s1", "r1"], response="session s1, run r1")) == []
    [reason] = carried(handover, run(references=["s1", "r1", "s2"], response="session s1, run r1"))
    assert reason == "the answer does not cite the earlier sessions and runs s2"


def test_an_incident_note_must_link_every_quote_to_a_verified_artifact():
    noted = job(report=True)
    assert carried(noted, run(report={"quotes": 3, "linked": 3, "artifacts": 2, "verified": 2})) == []
    [reason] = carried(noted, run(report={"quotes": 3, "linked": 2, "artifacts": 2, "verified": 1}))
    assert reason == "the incident note links 2 of 3 quote(s) to an artifact, 1 of 2 artifact digest(s) verified"
    assert carried(noted, run())
    assert carried(job(), run()) == []
