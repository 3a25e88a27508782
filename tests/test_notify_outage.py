"""
Delivery you can trust: the webhook receiver goes down for a minute and the
hermes worker (a process of its own) is killed with kill -9 meanwhile, with
messages in its outbox. Nothing is lost: once both are back every message
reaches the receiver, in the order it was made, once.
"""

import os
import signal
import time
from unittest import mock

import pytest
from conftest import WebhookReceiver, eventually, hermes_worker, network, norfab, run

from norfab_hermes.testing.embedded import kill_process_group, worker_process

pytestmark = pytest.mark.hardening

WORKER = "hermes-worker-1"
SECRET = "outage-secret"
OUTAGE = 60  # seconds the receiver is down


def test_a_receiver_down_for_a_minute_and_a_worker_killed_meanwhile_lose_nothing(model, tmp_path):
    hook = WebhookReceiver(SECRET, listen=False)
    channels = {"hook": {"type": "webhook", "url": hook.url, "secret_env": "NOTIFY_OUTAGE_SECRET", "events": ["test"]}}
    inventory = hermes_worker(model.base_url, {"idle": {"instructions": "You wait."}}, notify={"channels": channels})
    workers, files = network(["sw1"], users={WORKER: inventory})

    def send(text):
        reply = run(nf.client, "notify", worker=WORKER, action="test", channel="hook", text=text, timeout=1)
        assert not reply["failed"], reply["errors"]
        return reply["result"]["test"]["state"]

    with (
        mock.patch.dict(os.environ, {"NOTIFY_OUTAGE_SECRET": SECRET}),
        norfab(tmp_path, workers, files, separate=(WORKER,)) as nf,
    ):
        hook.start()
        with worker_process(nf, WORKER) as process:
            assert send("before") == "sent"
            hook.stop()
            down = time.time()
            assert [send("first"), send("second")] == ["waiting", "waiting"]
            kill_process_group(process, signal.SIGKILL)
        with worker_process(nf, WORKER):
            assert send("third") == "waiting"  # behind the two the killed worker left
            status = run(nf.client, "get_status", worker=WORKER)["result"]["notify"]["hook"]
            assert status["waiting"] == 3 and status["health"] in ("ok", "failing")
            time.sleep(max(0.0, OUTAGE - (time.time() - down)))
            hook.start()
            texts = eventually(
                lambda: (lambda t: t if len(t) == 4 else None)([p["summary"].rsplit(": ", 1)[-1] for p in hook.posts]),
                "every message delivered",
                timeout=120,
            )
            assert texts == ["before", "first", "second", "third"]
            assert len({p["id"] for p in hook.posts}) == 4
            time.sleep(3)  # nothing comes twice
            assert len(hook.posts) == 4
            status = run(nf.client, "get_status", worker=WORKER)["result"]["notify"]["hook"]
            assert (status["waiting"], status["dead"], status["health"]) == (0, 0, "ok")
    hook.stop()
