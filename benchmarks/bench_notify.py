"""
What notification channels cost a run: the same continued turns to two hermes
workers on one scripted model, ``hermes-quiet`` (no channels) and
``hermes-notifying`` with three channels, one of them down: a webhook to a
receiver here, email to an SMTP server here (aiosmtpd), and a webhook to a
port nobody listens on. Before the turns each channel is given test messages
(no rate limit), so that its thread sends them, and the down one fails and
backs off, while the turns run. Turns are interleaved in pairs; medians, p95
and the paired median of what the channels add.
"""

import os
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Dict, List
from unittest import mock

from common import added_rows, interleaved

from norfab_hermes.routing import Hermes
from norfab_hermes.testing.embedded import free_port, hermes_worker, running_norfab

TURNS = 100
WARM_UP = 3
QUEUED = 100  # test messages given to each channel before the turns
QUIET, BUSY = "hermes-quiet", "hermes-notifying"


class Receiver(BaseHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(204)
        self.send_header("Content-Length", "0")
        self.end_headers()


class Sink:
    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        return "250 OK"


def run(model_url: str) -> List[Dict[str, Any]]:
    from aiosmtpd.controller import Controller

    hook = ThreadingHTTPServer(("127.0.0.1", free_port()), Receiver)
    threading.Thread(target=hook.serve_forever, daemon=True).start()
    smtp = Controller(Sink(), hostname="127.0.0.1", port=free_port())
    smtp.start()
    channels = {
        "hook": {
            "type": "webhook",
            "url": f"http://127.0.0.1:{hook.server_port}/",
            "secret_env": "BENCH_HOOK_SECRET",
            "per_minute": 6000,
        },
        "mail": {
            "type": "email",
            "host": "127.0.0.1",
            "port": smtp.port,
            "sender": "h@b",
            "to": ["n@b"],
            "per_minute": 6000,
        },
        "down": {"type": "webhook", "url": f"http://127.0.0.1:{free_port()}/"},
    }
    workers = {
        QUIET: hermes_worker(model_url, {"quiet": {"instructions": "You echo."}}),
        BUSY: hermes_worker(model_url, {"busy": {"instructions": "You echo."}}, notify={"channels": channels}),
    }
    for inventory in workers.values():
        inventory["model"]["default"] = "scripted-model"  # without one Hermes probes /models every turn
    try:
        with tempfile.TemporaryDirectory() as directory, mock.patch.dict(os.environ, {"BENCH_HOOK_SECRET": "s"}):
            with running_norfab(Path(directory), workers) as nf:
                hermes = Hermes(nf.client, signer=None)

                def load() -> None:
                    for channel in channels:
                        for i in range(QUEUED):
                            kwargs = {"action": "test", "channel": channel, "text": str(i), "timeout": 0.01}
                            nf.client.run_job("hermes", "notify", kwargs=kwargs, workers=[BUSY], timeout=30)

                def turn(agent: str, worker: str) -> Any:
                    session = hermes.invoke(agent, "start", workers=worker)["result"]["session_id"]

                    def one(i: int) -> None:
                        reply = hermes.invoke(agent, f"again {i}", session_id=session, workers=worker)
                        if reply["failed"]:
                            raise RuntimeError(f"{agent}: {reply['errors']}")

                    return one

                load()
                times = interleaved({"quiet": turn("quiet", QUIET), "busy": turn("busy", BUSY)}, TURNS, WARM_UP)
                status = nf.client.run_job("hermes", "get_status", workers=[BUSY], timeout=30)[BUSY]["result"]
    finally:
        smtp.stop()
        hook.shutdown()
    waiting = {name: channel["waiting"] for name, channel in status["notify"].items()}
    note = (
        f"{TURNS} continued turns each, interleaved; the notifying worker's channels given {QUEUED} messages each "
        f"before (waiting at the end: {waiting})"
    )
    labels = {"quiet": "without channels", "busy": "with three channels, one down"}
    return added_rows("notify", times, "quiet", "busy", labels, note, "target: unchanged (within noise)")
