"""The evidence store's pure parts: a NorFab reply split into artifacts, kept, read back, pruned; an incident note (no NorFab)."""

import hashlib
import json
from datetime import datetime, timedelta, timezone
from types import SimpleNamespace

import pytest
from pydantic import ValidationError

from norfab_hermes.errors import InvalidRequest, UnknownArtifact
from norfab_hermes.models import ArtifactSummary, SessionDetails, SessionMessage
from norfab_hermes.nfcli import carryover
from norfab_hermes.worker.evidence import capture, report
from norfab_hermes.worker.evidence.store import INDEX, EvidenceStore

OUTPUT = "Interface  Status\nGi0/1      up"
SECRET_OUTPUT = "username admin password 0 Adm1nPw0rdQ7"
NORNIR = {
    "nornir-worker-1": {
        "result": {
            "r1": {"show ip interface brief": OUTPUT, "show run": SECRET_OUTPUT},
            "r2": {"show ip interface brief": OUTPUT},
        },
        "failed": False,
    }
}


def test_a_nornir_reply_is_one_piece_per_device_and_command():
    pieces = capture.pieces("nornir", "cli", NORNIR)
    assert [(p.worker, p.device, p.command) for p in pieces] == [
        ("nornir-worker-1", "r1", "show ip interface brief"),
        ("nornir-worker-1", "r1", "show run"),
        ("nornir-worker-1", "r2", "show ip interface brief"),
    ]
    assert pieces[0].text == OUTPUT
    assert not pieces[0].redacted
    assert pieces[1].text == "username admin password 0 ***"
    assert pieces[1].redacted


def test_any_other_task_is_one_piece_under_its_service_and_task():
    [piece] = capture.pieces("lab_records", "incidents", {"records-worker-1": {"result": {"b": 1, "a": [2]}}})
    assert (piece.device, piece.command) == (None, "lab_records.incidents")
    assert json.loads(piece.text) == {"a": [2], "b": 1}
    assert capture.pieces("nornir", "cli", {"w": {"result": None, "failed": True}}) == []


def test_a_quote_is_found_in_the_artifact_that_holds_it():
    texts = {"a" * 16: "Gi0/1   up   up\nGi0/2  down", "b" * 16: "other"}
    assert capture.quoted("Gi0/2 down", texts) == "a" * 16
    assert capture.quoted("Gi0/3 down", texts) is None
    assert capture.quoted("  ", texts) is None


def store(tmp_path, days=30):
    return EvidenceStore(tmp_path, days, lambda run: run.session_id)


RUN = SimpleNamespace(agent="noc", run_id="r" * 12, session_id="s1", case_id="INC-7")


def test_kept_artifacts_are_listed_by_run_and_session_and_read_back_whole(tmp_path):
    evidence = store(tmp_path)
    kept = evidence.keep_run(RUN, "brief", "nornir.cli", "job-1", capture.pieces("nornir", "cli", NORNIR), "ana")
    assert [a.sha256 for a in kept] == [
        hashlib.sha256(p.text.encode()).hexdigest() for p in capture.pieces("nornir", "cli", NORNIR)
    ]
    assert evidence.artifacts("noc", run_id=RUN.run_id) == kept == evidence.artifacts("noc", session_id="s1")
    assert evidence.artifacts("noc", run_id="other") == []
    assert evidence.artifacts("service") == []
    whole = evidence.artifact("noc", kept[0].artifact_id)
    assert whole.text == OUTPUT
    assert whole.approved_by == "ana"
    assert whole.job_uuid == "job-1"
    assert whole.case_id == "INC-7", "an artifact names its run's case"
    with pytest.raises(UnknownArtifact):
        evidence.artifact("service", kept[0].artifact_id)
    with pytest.raises(InvalidRequest, match="artifact_id"):
        evidence.artifact("noc", "../noc/index")


def test_artifacts_past_their_retention_are_deleted(tmp_path):
    evidence = store(tmp_path, days=1)
    old, new = evidence.keep("noc", "r1", None, "t", "nornir.cli", None, capture.pieces("nornir", "cli", NORNIR))[:2]
    index = tmp_path / "evidence" / "noc" / INDEX
    lines = [json.loads(line) for line in index.read_text().splitlines()]
    lines[0]["collected_at"] = (datetime.now(timezone.utc) - timedelta(days=2)).isoformat()
    index.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert evidence.prune() == 1
    assert [a.artifact_id for a in evidence.artifacts("noc")][0] == new.artifact_id
    assert not (tmp_path / "evidence" / "noc" / f"{old.artifact_id}.txt").exists()


def test_the_incident_note_links_each_quote_or_says_it_is_not_in_the_evidence(tmp_path):
    evidence = store(tmp_path)
    [artifact] = evidence.keep_run(
        RUN,
        "brief",
        "nornir.cli",
        "job-1",
        capture.pieces("nornir", "cli", {"w": {"result": {"r1": {"show ip interface brief": OUTPUT}}}}),
    )
    session = SessionDetails(
        session_id="s1",
        agent="noc",
        worker="w1",
        messages=[
            SessionMessage(role="user", content="[Answer format: JSON]\nCheck r1", timestamp="2026-11-30T09:00:00"),
            SessionMessage(
                role="assistant",
                content="Verdict: up\n```\nGi0/1      up\nGi0/9 invented\n```",
                timestamp="2026-11-30T09:01:00",
            ),
        ],
    )
    markdown, quotes, linked = report.incident_note(session, [artifact], evidence.texts("noc", [artifact]))
    assert (quotes, linked) == (2, 1)
    assert (
        f"> `Gi0/1      up`  \n> from [{artifact.artifact_id}](artifacts/{artifact.artifact_id}.txt) r1 show ip interface brief, sha256 `{artifact.sha256}`"
        in markdown
    )
    assert "> `Gi0/9 invented`  \n> **not found in the evidence of this session**" in markdown
    assert "> Check r1" in markdown
    assert "Answer format" not in markdown


class ReportRoutes:
    """A router whose one worker answers the report task with ``reply`` (and nothing else)."""

    def __init__(self, reply):
        self.reply, self.asked = reply, []

    def resolve(self, agent, workers, session_id):
        return SimpleNamespace(agent=agent, worker="hermes-worker-1")

    def one(self, task, target, kwargs):
        self.asked.append(task)
        return {"failed": False, "errors": [], "result": self.reply}


def test_a_workers_reply_never_names_a_path_on_the_operators_disk(tmp_path):
    folder = tmp_path / "notes"
    routes = ReportRoutes({"agent": "noc", "worker": "w", "session_id": "../../evil", "markdown": "# x"})
    out = carryover.report(routes, ["noc", "s1"], str(folder), None)
    assert "session id '../../evil' is not a file name" in str(out)
    assert not list(tmp_path.rglob("*")), "nothing is written"

    artifact = {"run_id": "r", "agent": "noc", "tool": "t", "task": "nornir.cli", "collected_at": "x"}
    artifact.update(sha256="0" * 64, chars=1)
    with pytest.raises(ValidationError, match="artifact_id"):
        ArtifactSummary(artifact_id="../../../.bashrc", **artifact)
    assert ArtifactSummary(artifact_id="0123456789abcdef", **artifact).artifact_id == "0123456789abcdef"
