"""Schedules that compare: criteria judged on a run's evidence or finding, ok/regressed/recovered, the watch file (no NorFab)."""

from datetime import datetime, timedelta, timezone

from norfab_hermes.models import ArtifactSummary, Criterion, CriterionResult, ScheduleDefinition, ScheduleRun
from norfab_hermes.worker.schedules import watch

UP = Criterion(tool="bgp_summary", device="core1", match=r"^10\.250\.0\.2\s.*\s\d+\s*$", name="PARTNER-X up")
NO_DENY = Criterion(tool="access_list", absent=True, match="deny .* eq 443")
SAID = Criterion(match="(?i)reachable")


def artifact(tool, device, text):
    summary = ArtifactSummary(
        artifact_id="a" * 16,
        run_id="r",
        agent="noc",
        tool=tool,
        task="nornir.cli",
        device=device,
        command="show",
        collected_at="2026-11-30T09:00:00+00:00",
        sha256="0",
        chars=len(text),
    )
    return summary, text


def test_a_criterion_is_judged_on_its_tools_evidence_of_its_device():
    up = artifact("bgp_summary", "core1", "Neighbor ...\n10.250.0.2      4   64900  00:00:09       212")
    down = artifact("bgp_summary", "core1", "10.250.0.2      4   64900  01:18:18 Idle (PfxCt)")
    other = artifact("bgp_summary", "core2", "10.250.0.2      4   64900  00:00:09       212")
    assert watch.judge([UP], "", [up])[0].met
    [missed] = watch.judge([UP], "", [down, other])
    assert not missed.met
    assert missed.criterion == "PARTNER-X up"
    assert "no line matches" in missed.detail
    [absent] = watch.judge([UP], "", [])
    assert not absent.met
    assert absent.detail == "bgp_summary was not called"


def test_an_absent_criterion_holds_when_nothing_matches_and_a_plain_one_reads_the_finding():
    acl = artifact("access_list", "dist1", "20 deny tcp any host 10.200.50.10 eq 443 log (1532 matches)")
    [denied] = watch.judge([NO_DENY], "", [acl])
    assert not denied.met
    assert "20 deny tcp" in denied.detail
    assert watch.judge([NO_DENY], "", [artifact("access_list", "dist1", "10 permit ip any any")])[0].met
    assert watch.judge([SAID], "The app is reachable", [])[0].met


def test_status_is_ok_regressed_or_recovered_only_for_a_completed_run():
    met, unmet = CriterionResult(criterion="c", met=True), CriterionResult(criterion="c", met=False)
    assert watch.status("ok", [met], None) == "ok"
    assert watch.status("ok", [unmet], None) == "regressed"
    assert watch.status("ok", [unmet], "regressed") == "regressed"
    assert watch.status("ok", [met], "regressed") == "recovered"
    assert watch.status("ok", [met], "recovered") == "ok"
    assert watch.status("failed", [unmet], "ok") == "failed"
    assert watch.status("ok", [], "regressed") == "ok"
    history = [ScheduleRun(schedule_id="x", status=s) for s in ("failed", "missed", "regressed", "ok")]
    assert watch.previous_status(history) == "regressed"
    assert watch.previous_status([]) is None


def test_the_watch_file_keeps_criteria_schema_and_the_end_of_observation(tmp_path):
    watches = watch.Watches(lambda agent: tmp_path / agent)
    kept = watches.set(
        "noc", "job1", ScheduleDefinition(criteria=[UP], observe_for="6h", response_schema={"type": "object"})
    )
    assert kept.criteria == [UP]
    assert kept.response_schema == {"type": "object"}
    until = datetime.fromisoformat(kept.until)
    assert timedelta(hours=5, minutes=59) < until - datetime.now(timezone.utc) <= timedelta(hours=6)
    assert not kept.ended(datetime.now(timezone.utc))
    assert kept.ended(until)
    assert watches.set("noc", "job1", ScheduleDefinition(prompt="new")).criteria == [UP], "an update lost the criteria"
    assert watch.hermes_fields(ScheduleDefinition(prompt="p", compare=True, criteria=[UP])) == {"prompt": "p"}
    watches.forget("noc", "job1")
    assert watches.get("noc", "job1") == watch.Watch()
    assert watches.all("service") == {}
