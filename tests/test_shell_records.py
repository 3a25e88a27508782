"""
The nf# commands over the workers' records: 'hermes runs' lists past runs
of every selected worker with filters, 'hermes audit export' writes the
audit logs as JSON lines whose hashes chain, 'hermes audit verify' shows
an intact log and names an edited entry. Runs started with a case id show
it, and 'hermes runs case-id' lists the runs of that case, at 80 columns too.
"""

import json
import re
import sqlite3
from pathlib import Path

import pytest
from conftest import TWO_WORKERS, hermes_shell, ok, run
from test_shell import LAB1, LAB2, fits, nfcli, terminal_width

from norfab_hermes.worker.records.audit import entry_hash

LAB = TWO_WORKERS


@pytest.fixture(scope="module")
def app(nf):
    """The shell, over one run on each worker: routing on hermes-lab-1, bgp on hermes-lab-2."""
    for worker, agent, text in ((LAB1, "routing", "check the NEEDLE on r1"), (LAB2, "bgp", "check peers")):
        ok(run(nf.client, "invoke", worker=worker, agent=agent, instructions=text))
    with hermes_shell(nf) as shell:
        yield shell


def flat(output):
    return " ".join(output.split())


def test_runs_lists_the_runs_of_every_worker_newest_first(app):
    out = nfcli(app, "hermes runs")
    assert out.index("check peers") < out.index("check the NEEDLE on r1"), out
    assert re.search(rf"{LAB2}\s+│\s+[0-9a-f]{{12}}\s+│\s+bgp\s+│.*│\s+completed\s+│\s+\d+\s+│\s+check peers", out), out
    run_id = re.search(rf"{LAB2}\s+│\s+([0-9a-f]{{12}})", out).group(1)
    assert f"read one: hermes run bgp {run_id} workers {LAB2}" in flat(out)

    out = nfcli(app, 'hermes runs text "needle" workers hermes-lab-*')
    assert "check the NEEDLE on r1" in out and "check peers" not in out
    out = nfcli(app, f"hermes runs agent routing workers {LAB1} limit 1")
    assert f"runs of worker '{LAB1}'" in out and "routing" in out
    out = nfcli(app, "hermes runs since yesterday")
    assert "is neither an ISO time" in flat(out)


def test_audit_export_writes_a_chain_of_json_lines(app, tmp_path):
    path = tmp_path / "audit.jsonl"
    out = nfcli(app, f"hermes audit export file {path} workers {LAB1}")
    assert re.search(rf"wrote (\d+) audit entries \(\1 of {LAB1}\) to {path}", flat(out)), out
    entries = [json.loads(line) for line in Path(path).read_text().splitlines()]
    assert [e["kind"] for e in entries[:2]] == ["run.started", "run.ended"]
    for before, entry in zip([None] + entries, entries):
        assert entry["prev"] == (before["hash"] if before else "0" * 64)
        fields = (entry["time"], entry["worker"], entry["kind"], entry["agent"], entry["run_id"], entry["actor"])
        data = json.dumps(entry["data"], sort_keys=True, separators=(",", ":"))
        assert entry["hash"] == entry_hash(entry["prev"], entry["seq"], *fields, data), (
            "an export can be checked offline"
        )
    out = nfcli(app, "hermes audit export kind run.ended")
    assert flat(out).endswith(f"2 entries (1 of {LAB1}, 1 of {LAB2})")


def test_audit_verify_shows_intact_logs_and_an_edited_entry(nf, app):
    out = nfcli(app, "hermes audit verify")
    assert re.search(rf"{LAB1}\s+│\s+yes\s+│\s+\d+\s+│\s+1-\d+", out), out
    assert re.search(rf"{LAB2}\s+│\s+yes", out), out
    home = run(nf.client, "get_status", worker=LAB2)["result"]["hermes_home"]
    with sqlite3.connect(Path(home) / "norfab_records.db") as db:
        db.execute("UPDATE audit SET actor = 'someone-else' WHERE seq = 1")
    out = nfcli(app, "hermes audit verify")
    assert re.search(rf"{LAB2}\s+│\s+NO", out), out
    assert f"{LAB2}: entry 1 was edited: its hash does not match its content" in flat(out)


def test_runs_started_with_a_case_id_show_it_and_are_listed_by_it(nf, app):
    out = flat(nfcli(app, f'hermes invoke routing "case one" case-id INC-5 workers {LAB1}'))
    assert "session new, case INC-5" in out, out
    out = flat(nfcli(app, f'hermes invoke bgp "case two" background case-id INC-5 workers {LAB2}'))
    background = re.search(r"run ([0-9a-f]{12}) started in the background", out).group(1)
    assert "case INC-5" in out, out
    ok(run(nf.client, "invoke", worker=LAB1, agent="routing", instructions="case other", case_id="INC-6"))
    with terminal_width(80):
        listed = fits(nfcli(app, "hermes runs case-id INC-5"))
    assert re.search(r"│\s+INC-5\s+│", listed), listed
    assert "case one" in listed and "case two" in listed
    assert "case other" not in listed and "check peers" not in listed
    header = flat(nfcli(app, f"hermes run bgp {background} workers {LAB2}"))
    assert f"run {background} | agent bgp | worker {LAB2}" in header and "| case INC-5" in header, header
    refused = flat(nfcli(app, 'hermes runs case-id "INC 5"'))
    assert "case_id 'INC 5' is not a case id" in refused, refused
