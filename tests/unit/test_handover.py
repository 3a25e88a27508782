"""A shift handover's pure parts: from when, and what the writer is asked (no NorFab)."""

from datetime import datetime, timedelta, timezone

import pytest

from norfab_hermes.errors import InvalidRequest
from norfab_hermes.models import (
    CriterionResult,
    HandoverAction,
    HandoverFinding,
    HandoverMaterial,
    HandoverRun,
    HandoverSession,
)
from norfab_hermes.routing.handover import BRIEF, DEFAULT_REQUEST, instructions
from norfab_hermes.worker.handover.material import since_time

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=timezone.utc)


def test_since_is_an_iso_time_or_a_duration_back_from_now():
    assert since_time("2h", NOW) == NOW - timedelta(hours=2)
    assert since_time(None, NOW) == NOW - timedelta(hours=12)
    assert since_time("2026-11-30T06:00:00+00:00", NOW) == NOW - timedelta(hours=3)
    with pytest.raises(InvalidRequest, match="since: 'yesterday' is neither an ISO time nor a duration"):
        since_time("yesterday", NOW)


def test_the_writer_is_given_every_reference_and_the_request_last():
    session = HandoverSession(
        worker="w1",
        agent="service",
        session_id="s1",
        request="Customer A cannot reach",
        answer="Verdict: ACL",
        runs=["r1"],
        jobs=["j1"],
        devices=["dist1"],
        actions=[HandoverAction(tool="clear", run_id="r1", job_uuid="j2", device="core1", approved_by="nfclient")],
    )
    finding = HandoverFinding(
        worker="w2",
        agent="routing",
        schedule_id="c1",
        name="watch",
        status="regressed",
        run_id="r9",
        session_id="s9",
        jobs=["j9"],
        criteria=[CriterionResult(criterion="up", met=False, detail="Idle")],
    )
    text = instructions(
        [
            HandoverMaterial(worker="w1", since="t", sessions=[session]),
            HandoverMaterial(worker="w2", since="t", findings=[finding]),
        ],
        "t",
        DEFAULT_REQUEST,
    )
    assert "### Session s1 of agent service on w1" in text
    assert "Runs: r1" in text
    assert "NorFab jobs: j1" in text
    assert "Action: clear on core1 approved by nfclient (run r1, job j2)" in text
    assert "### Schedule watch (c1) of agent routing on w2: regressed" in text
    assert "Run r9, session s9, NorFab jobs: j9" in text
    assert "Criterion NOT met: up (Idle)" in text
    assert text.splitlines()[-2:] == [BRIEF, DEFAULT_REQUEST]


def test_runs_of_workers_that_did_not_answer_come_from_the_shared_record_once():
    """Both answering workers carry the dead worker's run from the shared record: the writer reads it once;
    an answering worker's own runs are in its material already."""
    dead = HandoverRun(
        run_id="r9", agent="ops", worker="w3", ending="running", started="2026-11-30T08:00:00+00:00", request="fix r1"
    )
    alive = dead.model_copy(update={"run_id": "r8", "worker": "w2"})
    material = [
        HandoverMaterial(worker="w1", since="2026-11-30T06:00:00+00:00", record_runs=[dead, alive]),
        HandoverMaterial(worker="w2", since="2026-11-30T06:00:00+00:00", record_runs=[dead]),
    ]
    text = instructions(material, "2026-11-30T06:00:00+00:00", DEFAULT_REQUEST)
    assert "## Runs of workers that did not answer, from the fleet's shared record" in text
    assert text.count("Run r9 of agent ops on w3 (running") == 1 and "Run r8" not in text
    alone = [HandoverMaterial(worker="w1", since="2026-11-30T06:00:00+00:00")]
    assert "did not answer" not in instructions(alone, "2026-11-30T06:00:00+00:00", DEFAULT_REQUEST)
