"""
Tools whose service did not answer when the hermes worker started (it came up later) are retried by the
worker on its own: get_status turns ready once the service answers, without any run to trigger it.
"""

import time

from conftest import hermes_worker, norfab, run

from norfab_hermes.testing.embedded import worker_process

HERMES, NORNIR = "hermes-early", "nornir-late"
LATE = {
    "instructions": "You read devices.",
    "toolsets": ["norfab"],
    "tools": {"show": {"description": "Show a device's output", "norfab": {"service": "nornir", "task": "cli"}}},
}


def status(nf):
    return run(nf.client, "get_status", HERMES)["result"]


def test_tools_of_a_service_that_starts_later_become_ready_without_a_run(model, tmp_path):
    workers = {
        HERMES: hermes_worker(model.base_url, {"late": LATE}, tool_retry_interval=1),
        NORNIR: {"service": "nornir"},
    }
    with norfab(tmp_path, workers, separate=(NORNIR,)) as nf:
        first = status(nf)
        assert not first["ready"], first
        assert any("tool 'show': could not list the tasks of service 'nornir'" in error for error in first["errors"]), (
            first
        )
        with worker_process(nf, NORNIR):
            deadline = time.time() + 90
            now = status(nf)
            while not now["ready"] and time.time() < deadline:
                time.sleep(1)
                now = status(nf)
            assert now["ready"], now
            assert now["errors"] == [], now
            tool = run(nf.client, "get_agent", HERMES, agent="late")["result"]["tools"]["show"]
            assert tool["error"] is None
            assert "commands" in tool["parameters"]["properties"]  # cli's schema, read late
            assert not nf.client.job_db.fetch_jobs(service="hermes", task="invoke", last=10), "a run did the retry"
