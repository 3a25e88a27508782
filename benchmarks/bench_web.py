"""
The web console's page loads on a worker with 10,000 runs in its record (each with three tool calls
and one approval asked and decided, as bench_records writes them): the server's time to answer each
page's HTML and its data (the first event of a live page's stream), measured from a client on the
same host that keeps its session cookie like a browser, identity off; and the approvals page's first
load in a session with those 10,000 decisions in the audit log's last 7 days: it asks each log for the
newest 50 only (get_audit newest_first, through the audit_kind index). The console's NorFab client and
the worker share the benchmark's cores.
"""

import asyncio
import http.cookiejar
import tempfile
import threading
import urllib.request
from pathlib import Path
from typing import Any, Dict, List

from bench_records import RUNS, one_run
from common import WORKER, median, meets, p95, row, timed

from norfab_hermes.models import RecordsSettings
from norfab_hermes.testing.embedded import free_port, hermes_worker, running_norfab
from norfab_hermes.web.server import console_server
from norfab_hermes.worker.records.store import Records

LOADS = 20  # loads of each page
TARGET = "<= 300 ms"
AGENT = "interfaces"  # the agent bench_records' runs are of


def fill(home: Path) -> str:
    """RUNS recorded runs in the worker's record before it starts; the newest run's id."""
    home.mkdir(parents=True)
    records = Records(home, WORKER, RecordsSettings())
    for n in range(RUNS):
        one_run(records, n)
    records.close()
    return f"{RUNS - 1:012x}"


# one browser: its session cookie kept, so the approvals history is read on from where it stopped
BROWSER = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))


def first_event(url: str) -> None:
    """A live page's stream until its first event (the part's rendering) has arrived."""
    with BROWSER.open(url, timeout=60) as stream:
        while stream.readline().strip():
            pass


def load(url: str) -> None:
    with BROWSER.open(url, timeout=60) as page:
        page.read()


def run(url: str) -> List[Dict[str, Any]]:
    base = Path(tempfile.mkdtemp(prefix="bench-web-"))
    newest = fill(base / "home")
    inventory = hermes_worker(url, {AGENT: {"instructions": "You check interfaces."}}, hermes_home=str(base / "home"))
    inventory["model"]["default"] = "scripted-model"
    with running_norfab(base, {WORKER: inventory}) as nf:
        client = nf.make_client(name="hermes-web-bench")
        ready, box, port = threading.Event(), {}, free_port()

        async def serve() -> None:
            box["loop"], box["stop"] = asyncio.get_running_loop(), asyncio.Event()
            async with console_server(client, "127.0.0.1", port) as console:
                box["url"] = console
                ready.set()
                await box["stop"].wait()

        thread = threading.Thread(target=asyncio.run, args=(serve(),), daemon=True)
        thread.start()
        assert ready.wait(60), "the console did not start"
        console = box["url"]
        run_page = f"{console}/runs/{WORKER}/{AGENT}/{newest}"
        pages = {
            "approvals": [(load, f"{console}/approvals"), (first_event, f"{console}/approvals/live")],
            "runs": [(load, f"{console}/runs")],
            "run": [(load, run_page)],
            "agents": [(load, f"{console}/agents")],
            "schedules": [(load, f"{console}/schedules")],
            "audit": [(load, f"{console}/audit")],
        }
        took: Dict[str, List[float]] = {}
        first = {name: sum(timed(lambda f=f, a=a: f(a)) for f, a in requests) for name, requests in pages.items()}
        for name, requests in pages.items():
            took[name] = [
                sum(timed(lambda f=fetch, a=address: f(a)) for fetch, address in requests) for _ in range(LOADS)
            ]
        box["loop"].call_soon_threadsafe(box["stop"].set)
        thread.join(30)
        client.destroy()
    rows = [
        row(
            "web",
            f"approvals page, a session's first load, {RUNS} runs",
            1000 * first["approvals"],
            "ms",
            f"{RUNS} approvals decided in the last 7 days; the newest 50 read, newest first",
            TARGET,
            meets(1000 * first["approvals"], TARGET),
        )
    ]
    for name, values in took.items():
        ms = 1000 * median(values)
        note = f"median of {LOADS}; p95 {1000 * p95(values):.0f} ms; HTML and its data requests, identity off"
        rows.append(row("web", f"{name} page load, {RUNS} runs", ms, "ms", note, TARGET, meets(ms, TARGET)))
    return rows
