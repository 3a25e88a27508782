"""
Finding 3: no run without an invoke. A worker killed mid-turn (kill -9) and
started again never runs the cut turn on its own; the cut is recorded on the
session, and the next invoke answers its own instruction.
"""

import json
import signal
import threading
import time

import pytest
from conftest import hermes_worker, norfab, run

from norfab_hermes.testing.embedded import kill_process_group, worker_process

pytestmark = pytest.mark.hardening

WORKER = "hermes-worker-1"


def inventory(url):
    return hermes_worker(
        url, {"alpha": {"instructions": "You are ALPHA.", "hermes": {"model": {"default": "alpha-model"}}}}
    )


def requests_with(model, text):
    return [r for r in model.model.completions() if text in json.dumps(r["messages"])]


def test_a_turn_cut_by_kill_9_is_recorded_and_never_resumed(model, tmp_path):
    # the hermes worker runs as its own process, as on a real host: kill -9 is a real crash
    with norfab(tmp_path, {WORKER: inventory(model.base_url)}, separate=(WORKER,)) as nf:
        with worker_process(nf, WORKER) as process:
            first = run(nf.client, "invoke", agent="alpha", instructions="remember KIWI")["result"]
            session = first["session_id"]
            threading.Thread(
                target=nf.client.run_job,
                args=("hermes", "invoke"),
                kwargs={
                    "kwargs": {"agent": "alpha", "instructions": "CUTMARK SLEEP 60", "session_id": session},
                    "workers": WORKER,
                    "timeout": 90,
                },
                daemon=True,
            ).start()
            deadline = time.time() + 30
            while not requests_with(model, "CUTMARK") and time.time() < deadline:
                time.sleep(0.1)
            assert requests_with(model, "CUTMARK"), "the turn never reached the model"
            kill_process_group(process, signal.SIGKILL)
        cut_requests = len(requests_with(model, "CUTMARK"))

        with worker_process(nf, WORKER):
            time.sleep(5)  # Hermes resumed cut turns within 3 s of a restart
            assert len(requests_with(model, "CUTMARK")) == cut_requests, "the cut turn ran again without an invoke"

            messages = run(nf.client, "get_session", agent="alpha", session_id=session)["result"]["messages"]
            assert [m["role"] for m in messages[-2:]] == ["user", "assistant"]
            assert "CUTMARK" in messages[-2]["content"]
            assert "cut short" in messages[-1]["content"]

            again = run(nf.client, "invoke", agent="alpha", instructions="what now?", session_id=session)["result"]
            assert again["session_id"] == session
            assert again["response"] == "ECHO: what now?"
            [sent] = requests_with(model, "what now?")
            # the model is asked the new question on its own; the cut turn is closed in the history
            assert "CUTMARK" not in json.dumps(sent["messages"][-1])
