"""
The fleet's record unreachable: a hermes worker on real NorFab whose PostgreSQL (the test's own server)
is stopped and started again. A read-only investigation goes on, its records kept on the worker's disk
and moved into the record once it answers, in order, none twice; a change is refused with the reason
(code, the DSN variable, the fix) and no job of it reaches the nornir worker (its job store says so).
"""

import sqlite3
import time
from pathlib import Path

import psycopg
import pytest
from conftest import eventually, hermes_worker, network, network_jobs, norfab, ok, run
from test_changes import ENABLE_PORT, PORT_STATE, call, switch
from unit.test_records_store import ended, row

from norfab_hermes.models import GetRunsInput, RecordsSettings
from norfab_hermes.testing.postgres import new_database, stoppable_server
from norfab_hermes.worker.records.outbox import OUTBOX_FILE
from norfab_hermes.worker.records.store import Records

WORKER = "hermes-worker-1"
DSN_ENV = "NORFAB_HERMES_PG_DSN"
AGENTS = {
    "looker": {"instructions": "You look at ports.", "toolsets": ["norfab"], "tools": {"port_state": PORT_STATE}},
    "ops": {
        "instructions": "You change ports.",
        "toolsets": ["norfab"],
        "tools": {"port_state": PORT_STATE, "enable_port": ENABLE_PORT},
    },
}
LOOK = call("port_state", FB="sw1", port="GigabitEthernet0/1")


@pytest.fixture(scope="module")
def server():
    with stoppable_server() as found:
        yield found


@pytest.fixture(scope="module")
def lab(model, server, tmp_path_factory):
    settings = {"records": {"backend": "postgresql", "dsn_env": DSN_ENV}}
    users = {WORKER: hermes_worker(model.base_url, AGENTS, **settings)}
    workers, files = network(["sw1"], models={"sw1": switch("sw1")}, users=users)
    base = tmp_path_factory.mktemp("outage")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(DSN_ENV, server.dsn)
        with norfab(base, workers, files) as nf:
            yield nf, base


def in_record(dsn, sql, *params):
    with psycopg.connect(dsn) as db:
        return db.execute(sql, params).fetchall()


def test_an_investigation_goes_on_while_the_record_is_down_and_a_change_is_refused(lab, server):
    nf, base = lab
    home = Path(ok(run(nf.client, "get_status", worker=WORKER))["hermes_home"])
    before = ok(run(nf.client, "invoke", WORKER, 120, agent="looker", instructions=LOOK))
    assert before["stop_reason"] == "completed"
    server.stop()
    try:
        during = ok(run(nf.client, "invoke", WORKER, 120, agent="looker", instructions=LOOK + " OUTAGE-1"))
        assert during["stop_reason"] == "completed" and during["tool_calls"][0]["status"] == "completed"
        sent = len(network_jobs(base))
        refused = run(
            nf.client, "invoke", WORKER, 120, agent="ops", instructions=call("enable_port", FB="sw1", port="Gi0/2")
        )
        assert refused["failed"] and refused["result"]["code"] == "records_unavailable", refused
        reason = refused["errors"][0]
        assert f"${DSN_ENV}" in reason and "can change devices (enable_port" in reason and "Fix:" in reason
        assert len(network_jobs(base)) == sent, "no job of the refused change reached the nornir worker"
        status = ok(run(nf.client, "get_status", worker=WORKER))
        assert status["records_waiting"] >= 4 and f"${DSN_ENV}" in status["records_problem"]
        kept = sqlite3.connect(home / OUTBOX_FILE).execute("SELECT name FROM outbox ORDER BY seq").fetchall()
        assert [name for (name,) in kept][:2] == ["run_started", "run_running"] and ("run_ended",) in kept
    finally:
        server.start()

    # the record answers again: the investigation's records move over, in order, once each
    def moved():  # the kept writes go one by one: the run is there once its end is
        found = ok(run(nf.client, "get_runs", worker=WORKER, agent="looker", text="OUTAGE-1"))
        return found["total"] and found["runs"][0]["state"] == "finished" and found

    page = eventually(moved, "the investigation's ended run in the record")
    [summary] = page["runs"]
    assert (summary["run_id"], summary["state"], summary["stop_reason"]) == (during["run_id"], "finished", "completed")
    assert summary["tool_calls"] == 1 and page["record"]
    eventually(
        lambda: not sqlite3.connect(home / OUTBOX_FILE).execute("SELECT count(*) FROM outbox").fetchone()[0],
        "an empty outbox",
    )
    kinds = in_record(server.dsn, "SELECT kind FROM audit WHERE run_id = %s ORDER BY seq", during["run_id"])
    assert [kind for (kind,) in kinds] == ["run.started", "tool.call", "run.ended"]
    refusals = in_record(server.dsn, "SELECT data FROM audit WHERE kind = 'run.refused' AND agent = 'ops'")
    assert refusals and "records_unavailable" in refusals[-1][0], "the refusal is in the audit log too"
    verified = ok(run(nf.client, "verify_audit", worker=WORKER))
    assert verified["ok"], verified["problems"]
    later = ok(run(nf.client, "invoke", WORKER, 120, agent="looker", instructions=LOOK))
    assert later["stop_reason"] == "completed"


def test_a_kept_write_that_reached_the_record_before_a_crash_is_not_written_twice(server, tmp_path, monkeypatch):
    """The worker stopped between the record's commit and the outbox's delete: started again, it finds
    the write's mark in the record and drops it."""
    dsn = new_database(server.dsn, "outage_crash")
    monkeypatch.setenv(DSN_ENV, dsn)
    settings = RecordsSettings(backend="postgresql", dsn_env=DSN_ENV)
    records = Records(tmp_path, "w-crash", settings)
    server.stop()
    try:
        records.run_started(row("crash-1"))
        records.run_ended(ended("crash-1"), time.time())
        assert records.outbox.pending() == ["run_started", "run_ended"]
        outbox = sqlite3.connect(tmp_path / OUTBOX_FILE)
        kept = outbox.execute("SELECT seq, name, payload, durable, queued FROM outbox").fetchall()
        outbox.close()
    finally:
        server.start()
    eventually(lambda: not records.outbox.waiting, "the kept writes moved over")
    records.close()
    with sqlite3.connect(tmp_path / OUTBOX_FILE) as outbox:  # as if the deletes never happened
        outbox.executemany("INSERT INTO outbox (seq, name, payload, durable, queued) VALUES (?, ?, ?, ?, ?)", kept)
    again = Records(tmp_path, "w-crash", settings)
    eventually(lambda: not again.outbox.waiting, "the outbox emptied again")
    assert again.runs(GetRunsInput(limit=10)).total == 1
    entries = in_record(dsn, "SELECT kind FROM audit WHERE run_id = 'crash-1' ORDER BY seq")
    assert [kind for (kind,) in entries] == ["run.started", "run.ended"]
    assert again.verify().ok
    again.close()
