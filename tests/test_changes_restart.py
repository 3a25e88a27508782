"""
A change nobody knows the outcome of: the hermes worker, a process of its
own, is killed with kill -9 while its change job is on the switch. After the
restart the run, its session and the worker's status say outcome_unknown
with the change's job UUID and device, and so do the run's record and the
audit log (with the approved change); the change is never sent again, its
device takes no other change until an operator acknowledges it, and the
acknowledgement is in the audit log. The agent lists approvers: only they
approve its change and acknowledge it; another client's acknowledgement is
refused and changes nothing.
"""

import contextlib
import signal
import time

import pytest
from conftest import eventually, hermes_worker, network, norfab, run
from test_changes import ENABLE_PORT, PORT_STATE, call, changes_to, device_log, job_finished, jobs, switch

from norfab_hermes.testing.embedded import kill_process_group, worker_process

pytestmark = pytest.mark.hardening

WORKER = "hermes-worker-1"
LEAD = "change-lead"  # the NorFab client that alone approves and acknowledges fixer's changes
AGENTS = {
    "fixer": {
        "instructions": "You change ports.",
        "toolsets": ["norfab"],
        "run_timeout": 120,
        "approval_timeout": 60,
        "approvers": [LEAD],
        "tools": {"port_state": PORT_STATE, "enable_port": ENABLE_PORT},
    }
}


@contextlib.contextmanager
def client(nf, name):
    """Another NorFab client, destroyed before the broker stops (a live client's sockets would hold its context)."""
    other = nf.make_client(name=name)
    try:
        yield other
    finally:
        other.destroy()


def finished(nf, run_id):
    state = run(nf.client, "get_run", worker=WORKER, agent="fixer", run_id=run_id)["result"]
    return state if state["state"] == "finished" else None


def start_change(nf, port):
    started = run(
        nf.client, "start_run", worker=WORKER, agent="fixer", instructions=call("enable_port", FB="sw1", port=port)
    )
    return started["result"]


def test_a_change_cut_by_kill_9_is_an_unknown_outcome_never_made_twice(model, tmp_path):
    workers, files = network(
        ["sw1"], models={"sw1": switch("sw1")}, users={WORKER: hermes_worker(model.base_url, AGENTS)}
    )
    with norfab(tmp_path, workers, files, separate=(WORKER,)) as nf, client(nf, LEAD) as lead:
        with worker_process(nf, WORKER) as process:
            started = start_change(nf, "GigabitEthernet0/3")  # the switch takes 5 s over this port
            [approval] = eventually(lambda: run(nf.client, "get_approvals", worker=WORKER)["result"], "the approval")
            run(lead, "approve", worker=WORKER, approval_id=approval["approval_id"])
            [(job_uuid, _, _)] = eventually(lambda: changes_to(tmp_path, "sw1"), "the change job on nornir")
            kill_process_group(process, signal.SIGKILL)
        marker = tmp_path / f"__norfab__/files/worker/{WORKER}/hermes/norfab_changes/in_flight/{job_uuid}.json"
        assert marker.exists(), "the change was marked on disk before it was sent"
        # the switch finishes the change on its own: the worker never knew
        eventually(lambda: job_finished(tmp_path, job_uuid), "the change job ended on nornir")
        assert "2 no shutdown GigabitEthernet0/3" in device_log(nf, "sw1")

        with worker_process(nf, WORKER):
            status = run(nf.client, "get_status", worker=WORKER)["result"]["changes"]
            [unknown] = status["outcome_unknown"]
            assert (unknown["job_uuid"], unknown["devices"], unknown["run_id"]) == (
                job_uuid,
                ["sw1"],
                started["run_id"],
            )
            assert "stopped while the change job was in flight" in unknown["reason"]
            assert not marker.exists()
            state = run(nf.client, "get_run", worker=WORKER, agent="fixer", run_id=started["run_id"])["result"]
            assert (state["state"], state["stop_reason"]) == ("finished", "outcome_unknown")
            assert [u["job_uuid"] for u in state["outcome_unknown"]] == [job_uuid]
            # the run's record: settled like any run a crash cut, with this stop reason and the change named
            assert any(job_uuid in w and "sw1" in w for w in state["result"]["warnings"])
            [asked] = state["approvals"]
            assert (asked["state"], asked["devices"], asked["change_digest"]) == (
                "approved",
                ["sw1"],
                approval["change_digest"],
            )
            listed = run(nf.client, "get_runs", worker=WORKER, stop_reason="outcome_unknown")["result"]["runs"]
            assert [r["run_id"] for r in listed] == [started["run_id"]]
            entries = run(nf.client, "get_audit", worker=WORKER, run_id=started["run_id"])["result"]["entries"]
            decided = [e["data"] for e in entries if e["kind"] == "approval.decided"]
            assert [(d["change_digest"], d["devices"]) for d in decided] == [(approval["change_digest"], ["sw1"])]
            [ended] = [e["data"] for e in entries if e["kind"] == "run.ended"]
            assert ended["stop_reason"] == "outcome_unknown" and ended["outcome_unknown"][0]["job_uuid"] == job_uuid
            session = run(nf.client, "get_session", worker=WORKER, agent="fixer", session_id=started["session_id"])[
                "result"
            ]
            assert [u["job_uuid"] for u in session["outcome_unknown"]] == [job_uuid]
            assert (
                job_uuid in session["messages"][-1]["content"] and "nobody knows" in session["messages"][-1]["content"]
            )

            # never sent again, and sw1 takes no other change until an operator acknowledges it
            time.sleep(5)
            assert [j[0] for j in changes_to(tmp_path, "sw1")] == [job_uuid]
            sent = len(jobs(tmp_path))
            refused = start_change(nf, "GigabitEthernet0/1")
            state = eventually(lambda: finished(nf, refused["run_id"]), "the refused run finished")
            [summary] = state["result"]["tool_calls"]
            assert (
                summary["status"] == "refused"
                and f"device sw1 has a change of unknown outcome (job {job_uuid}" in summary["error"]
            )
            assert len(jobs(tmp_path)) == sent
            assert device_log(nf, "sw1").count("2 no shutdown GigabitEthernet0/3") == 1

            refused = run(nf.client, "acknowledge_outcome", worker=WORKER, outcome_id=unknown["outcome_id"])
            assert (
                refused["failed"]
                and f"may not acknowledge the change of unknown outcome '{unknown['outcome_id']}'"
                in (refused["errors"][0])
            )
            assert run(nf.client, "get_status", worker=WORKER)["result"]["changes"]["outcome_unknown"] == [unknown]
            kinds = run(nf.client, "get_audit", worker=WORKER, kind="approval.refused")["result"]["entries"]
            assert [(e["agent"], e["actor"]) for e in kinds] == [("fixer", nf.client.name)]
            acknowledged = run(
                lead, "acknowledge_outcome", worker=WORKER, outcome_id=unknown["outcome_id"], note="port is up"
            )
            assert acknowledged["result"]["note"] == "port is up" and acknowledged["result"]["acknowledged"]
            entries = run(nf.client, "get_audit", worker=WORKER, kind="change.acknowledged")["result"]["entries"]
            assert [(e["run_id"], e["actor"], e["data"]["job_uuid"]) for e in entries] == [
                (started["run_id"], LEAD, job_uuid)
            ]
            state = run(nf.client, "get_run", worker=WORKER, agent="fixer", run_id=started["run_id"])["result"]
            assert state["stop_reason"] == "outcome_unknown" and not state["outcome_unknown"], "the record keeps why"
            assert not run(nf.client, "get_status", worker=WORKER)["result"]["changes"]["outcome_unknown"]
            start_change(nf, "GigabitEthernet0/1")
            [pending] = eventually(lambda: run(nf.client, "get_approvals", worker=WORKER)["result"], "the approval")
            assert pending["devices"] == ["sw1"], "after the acknowledgement sw1 takes changes again"
            run(lead, "deny", worker=WORKER, approval_id=pending["approval_id"])
