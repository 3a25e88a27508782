"""A shift handover's pure parts: from when, and what the writer is asked (no NorFab)."""

from datetime import datetime, timedelta, timezone

import pytest

from norfab_hermes.errors import InvalidRequest
from norfab_hermes.models import CriterionResult, HandoverAction, HandoverFinding, HandoverMaterial, HandoverSession
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
