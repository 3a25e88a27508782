"""
The web console in a real browser (Debian's chromium driven by Playwright)
against a real NorFab: a hermes worker whose operators sign with SSH keys,
a nornir worker over FakeNOS switches, the console started on its own port
with a NorFab client of its own. Each case is checked on its side effect:
the nornir worker's job store, the approval's state, what the page holds.

``NORFAB_HERMES_SCREENSHOTS=docs/img`` also saves each page at 1280 and 390
px wide for docs/web.md.
"""

import asyncio
import io
import json
import os
import signal
import subprocess
import sys
import threading
import urllib.request
from contextlib import contextmanager, redirect_stdout
from pathlib import Path

import pytest
import yaml
from conftest import eventually, free_port, hermes_worker, network, norfab
from test_changes import ENABLE_PORT, PORT_STATE, changes_to, jobs, switch

from norfab_hermes.identity.audit import verify_export_file
from norfab_hermes.identity.keys import new_key
from norfab_hermes.identity.signatures import KeyFileSigner
from norfab_hermes.routing import Router
from norfab_hermes.web.__main__ import main as web_main
from norfab_hermes.web.server import console_server

CHROMIUM = Path("/usr/bin/chromium")
pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason="chromium is missing: make browser installs it")
playwright = pytest.importorskip("playwright.sync_api")
expect = playwright.expect

WORKER = "hermes-worker-1"
MARKER = "hermesPwned"
HOSTILE_VERSION = (
    f"Cisco IOS Software <script>window.{MARKER} = 1</script>\n"
    f'<img src=x onerror="window.{MARKER} = 2"> uptime is 2 weeks'
)
ROUTER = {
    "name": "hostile_version",
    "initial_prompt": "{base_prompt}#",
    "commands": {
        "terminal length 0": {"output": "", "help": "no paging", "prompt": "{base_prompt}#"},
        "terminal width 511": {"output": "", "help": "wide lines", "prompt": "{base_prompt}#"},
        "show version": {"output": HOSTILE_VERSION, "help": "version", "prompt": "{base_prompt}#"},
    },
}
SHOW_VERSION = {
    "input_schema": {"type": "object", "properties": {"FB": {"type": "string"}}, "required": ["FB"]},
    "norfab": {"service": "nornir", "task": "cli", "kwargs": {"commands": ["show version"]}},
}
FIXER = {
    "instructions": "You change ports.",
    "toolsets": ["norfab"],
    "run_timeout": 120,
    "approval_timeout": 300,
    "tools": {"port_state": PORT_STATE, "enable_port": ENABLE_PORT, "show_version": SHOW_VERSION},
}
ROLES = {"lead": {"*": ["operator", "approver", "admin"]}, "noc": {"*": ["operator"]}, "vera": {"*": ["viewer"]}}
SCREENSHOTS = os.environ.get("NORFAB_HERMES_SCREENSHOTS")
WIDTHS = {"wide": 1280, "narrow": 390}


def call(tool, **arguments):
    return f"CALL {tool} {json.dumps(arguments)}"


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    folder = tmp_path_factory.mktemp("keys")
    return {name: folder / name for name in ROLES if new_key(folder / name, name)}


@pytest.fixture(scope="module")
def lab(model, keys, tmp_path_factory):
    operators = {name: {"keys": [Path(f"{path}.pub").read_text()], "roles": ROLES[name]} for name, path in keys.items()}
    worker = hermes_worker(
        model.base_url, {"fixer": FIXER}, operators="nf://operators.yaml", tool_concurrency_per_worker=4
    )
    workers, files = network(
        ["sw1", "sw2", "r9"], models={"sw1": switch("sw1"), "sw2": switch("sw2"), "r9": ROUTER}, users={WORKER: worker}
    )
    files["operators.yaml"] = operators
    base = tmp_path_factory.mktemp("lab")
    with norfab(base, workers, files) as nf:
        yield nf, base


@pytest.fixture(scope="module")
def noc(lab, keys):
    """The shell's router signing as operator noc: the runs the console is asked about."""
    return Router(lab[0].client, signer=KeyFileSigner.load(keys["noc"]))


@contextmanager
def serving(client):
    """The console, as ``python -m norfab_hermes.web`` runs it, on a thread with NorFab client ``client``."""
    port, ready, box = free_port(), threading.Event(), {}

    async def serve():
        box["loop"], box["stop"] = asyncio.get_running_loop(), asyncio.Event()
        async with console_server(client, "127.0.0.1", port) as url:
            box["url"] = url
            ready.set()
            await box["stop"].wait()

    thread = threading.Thread(target=asyncio.run, args=(serve(),), name="console", daemon=True)
    thread.start()
    assert ready.wait(60), "the console did not start"
    try:
        yield box["url"]
    finally:
        box["loop"].call_soon_threadsafe(box["stop"].set)
        thread.join(30)
        client.destroy()


@pytest.fixture(scope="module")
def console(lab):
    with serving(lab[0].make_client(name="hermes-web")) as url:
        yield url


@pytest.fixture(scope="module")
def browser():
    with playwright.sync_playwright() as driver:
        chromium = driver.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        yield chromium
        chromium.close()


def signed_in(browser, console, keys, operator):
    """A browser context signed in as ``operator``: the sign-in page's command run with their key."""
    context = browser.new_context(viewport={"width": WIDTHS["wide"], "height": 900})
    page = context.new_page()
    page.goto(f"{console}/approvals")
    assert page.url == f"{console}/signin", "an unsigned browser is sent to sign in"
    shoot(page, "signin")
    command = page.inner_text("#command").split()
    printed = io.StringIO()
    with redirect_stdout(printed):
        assert web_main(["grant", "--operator", operator, "--key", str(keys[operator]), command[-1]]) == 0
    page.goto(printed.getvalue().strip())
    assert page.url == f"{console}/approvals"
    assert page.inner_text("#operator") == f"signed in as {operator}"
    return page


# what scrolls sideways at a width: the page itself, or any element of it (a table in its scroll box)
SIDEWAYS = """() => [document.scrollingElement, ...document.querySelectorAll("main *")]
    .filter(e => e === document.scrollingElement ? e.scrollWidth > window.innerWidth + 1
                 : e.scrollWidth > e.clientWidth + 1 && ["auto", "scroll"].includes(getComputedStyle(e).overflowX))
    .map(e => `${e.tagName.toLowerCase()}.${e.className}: ${e.scrollWidth} > ${e.clientWidth}`)"""


def fits(page, width=WIDTHS["narrow"]):
    """The page at ``width`` px scrolls nowhere sideways: its tables stack their rows as cards."""
    page.set_viewport_size({"width": width, "height": 900})
    assert page.evaluate("document.scrollingElement.scrollWidth") <= width + 1, page.url
    assert page.evaluate(SIDEWAYS) == [], page.url
    page.set_viewport_size({"width": WIDTHS["wide"], "height": 900})


def shoot(page, name):
    """Check that the page fits 390 px, and save it at both widths for the docs when asked
    (NORFAB_HERMES_SCREENSHOTS)."""
    fits(page)
    if not SCREENSHOTS:
        return
    for label, width in WIDTHS.items():
        page.set_viewport_size({"width": width, "height": 900})
        page.screenshot(path=str(Path(SCREENSHOTS) / f"web-{name}-{label}.png"), full_page=True)
    page.set_viewport_size({"width": WIDTHS["wide"], "height": 900})


def park(noc, host, port="GigabitEthernet0/1"):
    """A run of noc's asking to bring ``host``'s port up: it waits for an approval."""
    res = noc.call("start_run", [WORKER], {"agent": "fixer", "instructions": call("enable_port", FB=host, port=port)})
    return res[WORKER]["result"]["run_id"]


def run_state(noc, run_id):
    return noc.call("get_run", [WORKER], {"agent": "fixer", "run_id": run_id})[WORKER]["result"]


def pending(noc):
    return noc.call("get_approvals", [WORKER])[WORKER]["result"]


def test_an_approval_shows_live_with_its_diff_and_approved_in_the_page_the_change_runs(
    lab, console, browser, keys, noc
):
    nf, base = lab
    page = signed_in(browser, console, keys, "lead")
    run_id = park(noc, "sw1")
    # the page was open before the run asked: the approval comes without a reload
    card = page.locator("article.approval")
    card.wait_for(timeout=60_000)
    assert page.inner_text(".diff pre").strip() == "+ interface GigabitEthernet0/1\n+ no shutdown"
    [approval] = pending(noc)
    assert card.get_attribute("data-approval") == approval["approval_id"]
    assert page.inner_text(".requested-by") == "noc" and "lead" in page.inner_text(".may-decide")
    assert page.inner_text(".digest") == approval["change_digest"]
    assert call("enable_port", FB="sw1", port="GigabitEthernet0/1") in page.inner_text(".question")
    assert not changes_to(base, "sw1"), "nothing changes while the approval waits"
    shoot(page, "approvals")
    page.fill("textarea[name=note]", "checked the dry run")
    page.click("button.approve")
    assert "approved" in page.inner_text(".banner.flash")
    state = eventually(lambda: (s := run_state(noc, run_id))["state"] == "finished" and s, "the approved run ends")
    [summary] = [c for c in state["result"]["tool_calls"] if c["tool"] == "enable_port"]
    assert summary["status"] == "completed" and summary["change"]["digest"] == approval["change_digest"]
    [change] = changes_to(base, "sw1")
    assert change[0] == summary["job_uuid"], "the change that ran is the one the page approved"
    decided = page.locator(f"table.decided tr[data-approval='{approval['approval_id']}']")
    decided.wait_for(timeout=30_000)
    assert "approved" in decided.inner_text() and "checked the dry run" in decided.inner_text()
    # the run's timeline: each tool call with the NorFab job that ran it
    page.goto(f"{console}/runs/{WORKER}/fixer/{run_id}")
    rows = page.locator("tr.tool-call")
    assert rows.count() == len(state["result"]["tool_calls"]) >= 1
    shown = page.locator("code.job-uuid").all_inner_texts()
    assert shown == [c["job_uuid"] for c in state["result"]["tool_calls"]]
    network_jobs = {uuid for uuid, _, _ in jobs(base)}
    assert set(shown) <= network_jobs, "every job UUID shown is a job the nornir worker ran"
    assert "lead" in page.inner_text(".run-approvals") and "checked the dry run" in page.inner_text(".run-approvals")
    shoot(page, "run")
    page.goto(f"{console}/runs?agent=fixer")
    assert run_id in page.inner_text("table.runs")
    shoot(page, "runs")
    page.context.close()


def test_a_viewers_approve_is_refused_and_nothing_runs_and_a_decision_elsewhere_shows(lab, console, browser, keys, noc):
    nf, base = lab
    vera = signed_in(browser, console, keys, "vera")
    run_id = park(noc, "sw2")
    vera.locator("article.approval").wait_for(timeout=60_000)
    [approval] = pending(noc)
    vera.click("button.approve")
    assert "operator 'vera' may not approve" in vera.inner_text(".banner.flash")
    assert [a["approval_id"] for a in pending(noc)] == [approval["approval_id"]], "still pending"
    assert not changes_to(base, "sw2"), "the viewer's approve ran nothing"
    # lead denies it in a browser of their own: vera's page shows it decided without a reload
    lead = signed_in(browser, console, keys, "lead")
    lead.fill("textarea[name=note]", "not tonight")
    lead.click("button.deny")
    assert "denied" in lead.inner_text(".banner.flash")
    row = vera.locator(f"table.decided tr[data-approval='{approval['approval_id']}']")
    row.wait_for(timeout=30_000)
    assert "denied" in row.inner_text()
    expect(vera.locator("article.approval")).to_have_count(0)
    eventually(lambda: run_state(noc, run_id)["state"] == "finished", "the denied run ends")
    assert not changes_to(base, "sw2")
    vera.context.close()
    lead.context.close()


def test_a_decision_through_the_client_shows_in_the_open_page_and_in_every_sessions_history(
    lab, console, browser, keys, noc
):
    nf, _ = lab
    page = signed_in(browser, console, keys, "lead")
    page.evaluate("window.stayed = true")
    run_id = park(noc, "sw2", "GigabitEthernet0/2")
    expect(page.locator("article.approval")).to_have_count(1, timeout=60_000)
    [approval] = pending(noc)
    # decided from the nf# shell's router, not from this page: the page follows it from its event stream
    shell = Router(nf.client, signer=KeyFileSigner.load(keys["lead"]))
    assert not shell.decide("deny", approval["approval_id"], "denied from nf#", workers=WORKER)[WORKER]["failed"]
    row = page.locator(f"table.decided tr[data-approval='{approval['approval_id']}']")
    expect(row).to_contain_text("denied from nf#", timeout=60_000)
    expect(page.locator("article.approval")).to_have_count(0, timeout=60_000)
    assert page.evaluate("window.stayed") is True, "no reload"
    eventually(lambda: run_state(noc, run_id)["state"] == "finished", "the denied run ends")
    # a browser signed in afterwards never saw any of them pending: the history comes from the workers' records
    fresh = signed_in(browser, console, keys, "lead")
    ended = shell.call("get_audit", [WORKER], {"kind": "approval.decided"})[WORKER]["result"]["entries"]
    assert len(ended) >= 3, "this module's earlier tests decided approvals too"
    shown = fresh.locator("table.decided tr[data-approval]")
    assert shown.evaluate_all("rows => rows.map(r => r.dataset.approval)") == [
        e["data"]["approval_id"] for e in reversed(ended)
    ], "every decided approval, newest first"
    expect(fresh.locator(f"table.decided tr[data-approval='{approval['approval_id']}'] .state")).to_have_text("denied")
    page.context.close()
    fresh.context.close()


def test_an_open_run_page_shows_its_tool_calls_and_their_jobs_as_they_happen(lab, console, browser, keys, noc):
    nf, base = lab
    page = signed_in(browser, console, keys, "lead")
    instructions = f"{call('show_version', FB='r9')} {call('enable_port', FB='sw1', port='GigabitEthernet0/2')}"
    res = noc.call("start_run", [WORKER], {"agent": "fixer", "instructions": instructions})
    run_id = res[WORKER]["result"]["run_id"]
    page.goto(f"{console}/runs/{WORKER}/fixer/{run_id}")
    page.evaluate("window.stayed = true")
    # in flight: the read-only call has run (its job named in the timeline), the change waits for its approval
    expect(page.locator("#run-state")).to_have_text("waiting_for_approval", timeout=60_000)
    expect(page.locator("ol.events")).to_contain_text("tool show_version completed, job ", timeout=60_000)
    # and its row in the tool-call table, with the job that ran it, while the run still waits
    in_flight = run_state(noc, run_id)
    [done] = in_flight["tool_calls"]
    assert (in_flight["state"], in_flight["result"], done["tool"]) == ("waiting_for_approval", None, "show_version")
    row = page.locator("tr.tool-call", has_text=done["job_uuid"])
    expect(row).to_contain_text("show_version", timeout=30_000)
    expect(row.locator("code.job-uuid")).to_have_text(done["job_uuid"])
    assert page.inner_text("#run-state") == "waiting_for_approval", "still in flight"
    fits(page)
    [approval] = pending(noc)
    shell = Router(nf.client, signer=KeyFileSigner.load(keys["lead"]))
    assert not shell.decide("approve", approval["approval_id"], "go", workers=WORKER)[WORKER]["failed"]
    expect(page.locator("#run-state")).to_contain_text("finished", timeout=60_000)
    calls = run_state(noc, run_id)["result"]["tool_calls"]
    assert [c["tool"] for c in calls] == ["show_version", "enable_port"]
    for c in calls:
        expect(page.locator("ol.events")).to_contain_text(f"job {c['job_uuid']}")  # its outcome's event
    assert page.locator("code.job-uuid").all_inner_texts() == [c["job_uuid"] for c in calls]
    assert {c["job_uuid"] for c in calls} <= {uuid for uuid, _, _ in jobs(base)}, "jobs the nornir worker ran"
    assert page.evaluate("window.stayed") is True, "the timeline changed in place"
    page.context.close()


def test_with_identity_off_every_page_of_a_real_lab_says_so(model, browser, tmp_path):
    """A lab of its own whose hermes worker has no operators: no sign-in, the banner on every page."""
    worker = hermes_worker(model.base_url, {"fixer": FIXER})
    workers, files = network(["sw1"], models={"sw1": switch("sw1")}, users={WORKER: worker})
    with norfab(tmp_path, workers, files) as nf, serving(nf.make_client(name="hermes-web-open")) as url:
        status = nf.client.run_job("hermes", "get_status", workers=[WORKER], timeout=60)[WORKER]["result"]
        page = browser.new_page()
        for path in ("approvals", "runs", "agents", "schedules", "audit"):
            page.goto(f"{url}/{path}")
            assert page.url == f"{url}/{path}", "no sign-in with identity off"
            expect(page.locator("#identity-off")).to_contain_text(f"{WORKER}: {status['identity']}")
            expect(page.locator("#identity-off")).to_contain_text("NorFab client hermes-web-open")
            fits(page)
        page.close()


def test_device_output_in_an_answer_renders_as_text_and_runs_no_script(lab, console, browser, keys, noc):
    res = noc.call("invoke", [WORKER], {"agent": "fixer", "instructions": call("show_version", FB="r9")}, timeout=120)
    run_id = res[WORKER]["result"]["run_id"]
    page = signed_in(browser, console, keys, "lead")
    page.goto(f"{console}/runs/{WORKER}/fixer/{run_id}")
    answer = page.inner_text("#answer")
    assert f"<script>window.{MARKER} = 1</script>" in answer, answer
    assert page.locator("#answer script, #answer img").count() == 0
    assert page.evaluate(f"window.{MARKER}") is None, "no script of the device's ran"
    # the evidence behind it: the device's output whole, as text, its digest checked in the console
    page.click("table.artifacts a")
    assert page.inner_text("#device") == "r9" and page.inner_text("#command") == "show version"
    assert HOSTILE_VERSION in page.inner_text("#artifact")
    assert page.inner_text("#digest-check") == "matches the text below"
    # the digest the page shows is the one `hermes evidence` shows for the artifact (its id ends the page's path)
    shown = noc.call("evidence", [WORKER], {"agent": "fixer", "artifact_id": page.url.rsplit("/", 1)[-1]})[WORKER]
    assert not shown["failed"], shown["errors"]
    assert page.inner_text("code.digest") == f"sha256:{shown['result']['artifact']['sha256']}"
    assert page.locator("#artifact script, #artifact img").count() == 0
    assert page.evaluate(f"window.{MARKER}") is None
    shoot(page, "evidence")
    csp = page.request.get(page.url).headers["content-security-policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp
    page.context.close()


def test_a_post_without_the_csrf_token_is_refused(lab, console, browser, keys, noc):
    nf, base = lab
    page = signed_in(browser, console, keys, "lead")
    run_id = park(noc, "sw2", "GigabitEthernet0/3")
    page.locator("article.approval").wait_for(timeout=60_000)
    [approval] = pending(noc)
    forged = page.request.post(
        f"{console}/approvals/{approval['approval_id']}/approve", form={"worker": WORKER, "note": "forged"}
    )
    assert forged.status == 403
    assert [a["approval_id"] for a in pending(noc)] == [approval["approval_id"]], "still pending"
    # signed out, the session is gone: its cookie no longer acts
    page.click("header .who button")
    assert page.url == f"{console}/signin"
    assert page.request.get(f"{console}/approvals/live").status == 403
    assert noc.decide("deny", approval["approval_id"], "cleanup", workers=WORKER)[WORKER]["failed"], "no approver"
    # the run's timeline, open while it waits, follows it to its end without a reload
    lead = signed_in(browser, console, keys, "lead")
    lead.goto(f"{console}/runs/{WORKER}/fixer/{run_id}")
    assert lead.inner_text("#run-state") == "waiting_for_approval"
    lead.evaluate("window.stayed = true")
    shell = Router(nf.client, signer=KeyFileSigner.load(keys["lead"]))
    assert not shell.decide("deny", approval["approval_id"], "not tonight", workers=WORKER)[WORKER]["failed"]
    lead.locator("#run-state", has_text="finished").wait_for(timeout=60_000)
    assert lead.evaluate("window.stayed") is True, "the timeline changed in place"
    assert "denied by lead" in lead.inner_text(".run-approvals")
    assert not [j for j in changes_to(base, "sw2") if "GigabitEthernet0/3" in str(j[2])]
    lead.context.close()


def test_the_documented_command_serves_the_console_against_the_running_broker(lab):
    """python -m norfab_hermes.web --inventory: a NorFab client of its own, no broker started, 127.0.0.1."""
    nf, base = lab
    port = free_port()
    command = [sys.executable, "-m", "norfab_hermes.web", "--inventory", str(Path(nf.inventory_path).resolve())]
    process = subprocess.Popen(
        [*command, "--port", str(port), "--name", "hermes-web-cli"],
        cwd=base,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        line = process.stdout.readline()
        assert line.startswith(f"hermes console on http://127.0.0.1:{port}/hermes"), line
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/hermes/approvals") as page:
            assert page.url.endswith("/hermes/signin"), "the workers have operators: sign in first"
    finally:
        process.send_signal(signal.SIGINT)
        assert process.wait(30) == 0


def test_schedules_show_their_history_strip_and_pause_and_resume_in_the_page(lab, console, browser, keys):
    nf, _ = lab
    shell = Router(nf.client, signer=KeyFileSigner.load(keys["lead"]))

    def schedule(**kwargs):
        res = shell.call("schedule", [WORKER], {"agent": "fixer", **kwargs})[WORKER]
        assert not res["failed"], res["errors"]
        return res["result"]

    up = {"tool": "port_state", "device": "sw2", "match": "GigabitEthernet0/1 is up", "name": "Gi0/1 up"}
    definition = {
        "name": "watch-sw2",
        "prompt": call("port_state", FB="sw2", port="GigabitEthernet0/1"),
        "schedule": "every 1h",
        "compare": True,
        "criteria": [up],
    }
    [made] = schedule(action="create", definition=definition)["schedules"]

    def ran(count):
        schedule(action="run", schedule_id=made["schedule_id"])
        return eventually(
            lambda: (
                len(runs := schedule(action="history", schedule_id=made["schedule_id"])["history"]) >= count and runs
            ),
            f"run {count} is recorded",
        )

    assert ran(1)[0]["status"] == "ok"
    # the port goes down on the switch (not through hermes): the next run regresses
    shut = {"FB": "sw2", "config": ["interface GigabitEthernet0/1", "shutdown"]}
    assert not any(r["failed"] for r in nf.client.run_job("nornir", "cfg", kwargs=shut, timeout=60).values())
    assert ran(2)[0]["status"] == "regressed"
    page = signed_in(browser, console, keys, "lead")
    page.goto(f"{console}/schedules")
    row = page.locator(f"tr.schedule[data-schedule='{made['schedule_id']}']")
    strip = row.locator("ol.strip li")
    assert [strip.nth(i).get_attribute("class") for i in range(strip.count())] == ["run-ok", "run-regressed"]
    assert row.locator(".schedule-state").inner_text() == "scheduled" and row.locator("time").inner_text()
    shoot(page, "schedules")
    row.locator("button.pause").click()
    assert page.locator(".banner.flash").count() == 1
    assert row.locator(".schedule-state").inner_text() == "paused"
    assert schedule(action="list")["schedules"][0]["state"] == "paused", "the worker paused it"
    row.locator("button.resume").click()
    assert row.locator(".schedule-state").inner_text() == "scheduled"
    # a viewer may not read an agent's schedules (admin): the page says why, and offers nothing to press
    vera = signed_in(browser, console, keys, "vera")
    vera.goto(f"{console}/schedules")
    assert "operator 'vera' may not schedule" in vera.inner_text("main")
    assert vera.locator("tr.schedule").count() == 0
    vera.context.close()
    page.context.close()


def test_agents_and_an_audit_log_whose_console_decisions_verify_offline(lab, console, browser, keys, tmp_path):
    page = signed_in(browser, console, keys, "lead")
    page.goto(f"{console}/agents")
    assert page.inner_text("tr.agent[data-agent=fixer] .changes") == "enable_port"
    shoot(page, "agents")
    page.goto(f"{console}/audit")
    page.click("#verify")
    assert page.inner_text(f"table.audit-checks tr[data-worker='{WORKER}'] td.state") == "intact"
    shoot(page, "audit")
    with page.expect_download() as download:
        page.click("#export")
    exported = tmp_path / "hermes-audit.jsonl"
    download.value.save_as(exported)
    operators = tmp_path / "operators.yaml"
    operators.write_text(
        yaml.safe_dump({n: {"keys": [Path(f"{p}.pub").read_text()], "roles": ROLES[n]} for n, p in keys.items()})
    )
    count, problems = verify_export_file(exported, operators)
    assert count and not problems
    entries = [json.loads(line) for line in exported.read_text().splitlines()]
    decided = [e for e in entries if e["kind"] == "approval.decided" and e["data"]["state"] == "approved"]
    assert decided, sorted({e["kind"] for e in entries})
    assert decided[0]["actor"] == "lead"
    claim = json.loads(decided[0]["data"]["signed"]["claim"])
    assert claim["grant"], "the console's decision is signed by its session key under lead's grant"
    page.context.close()
