"""The console's pages over a fake NorFab client (no NorFab, no browser): identity off said on every page,
untrusted text escaped, the CSRF token required, the security headers on pages and static files."""

import asyncio
import json
from urllib.parse import urlencode

import pytest
import tornado.httpserver
import tornado.testing
from norfab.clients.nfweb.server import make_nfweb_application
from tornado.httpclient import AsyncHTTPClient, HTTPResponse

from norfab_hermes.web.application import HermesConsole, make_app
from norfab_hermes.web.handlers import CSP
from norfab_hermes.web.server import answered_hosts

from .fakes import FakeClient, FakeWorker, ok

WORKER = "hermes-lab-1"
OFF = "no operators configured: ANY NorFab client that reaches the broker can act under any name"
HOSTILE = "<script>window.owned = 1</script>"
APPROVAL = {
    "approval_id": "a1",
    "run_id": "r1",
    "agent": "fixer",
    "worker": WORKER,
    "tool": "enable_port",
    "target": "nornir.cfg on all",
    "arguments_digest": "d1",
    "state": "pending",
    "requested": "2026-12-02T07:00:00+00:00",
    "expires": "2026-12-02T08:00:00+00:00",
    "requested_by": HOSTILE,
    "preview": {"sw1": f"interface Gi0/1\ndescription {HOSTILE}"},
    "change_digest": "c1",
}
RUN = {
    "run_id": "r1",
    "agent": "fixer",
    "worker": WORKER,
    "state": "finished",
    "stop_reason": "completed",
    "started": "2026-12-02T07:00:00+00:00",
    "instructions": HOSTILE,
    "result": {
        "response": f"**bold** {HOSTILE} [x](javascript:alert(1))",
        "run_id": "r1",
        "agent": "fixer",
        "worker": WORKER,
        "stop_reason": "completed",
        "tool_calls": [
            {"tool": "show", "arguments_digest": "d", "job_uuid": "j-1", "status": "completed", "duration": 0.5}
        ],
    },
}
ARTIFACT = {
    "artifact_id": "0123456789abcdef",
    "run_id": "r1",
    "agent": "fixer",
    "tool": "show",
    "task": "nornir.cli",
    "collected_at": "2026-12-02T07:00:01+00:00",
    "sha256": "0" * 64,
    "chars": 5,
    "text": HOSTILE,
}


class OpenWorkers(FakeClient):
    """A hermes worker without operators, with one pending approval and one finished run."""

    name = "hermes-web"

    def answer(self, name, task, kwargs):
        answers = {
            "get_status": {"ready": True, "max_concurrent_runs": 4, "identity": OFF},
            "get_approvals": [APPROVAL],
            "get_run": RUN,
            "get_audit": {"entries": []},  # no approval decided yet
            "get_runs": {"runs": [{k: RUN[k] for k in ("run_id", "agent", "worker", "state", "started")}]},
            "evidence": {"agent": "fixer", "worker": WORKER, "artifact": ARTIFACT},
            "approve": {**APPROVAL, "state": "approved"},
        }
        return ok(answers[task]) if task in answers else super().answer(name, task, kwargs)


@pytest.fixture(params=["alone", "nfweb"])
def served(request):
    """(fetch(path, **options), the fake client) of a console served on a free port: on its own
    (make_app), and as an application module of NorFab's NFWeb host (which sets no xsrf_cookies)."""
    client = OpenWorkers({WORKER: FakeWorker(agents=["fixer"])})
    loop = asyncio.new_event_loop()
    sock, port = tornado.testing.bind_unused_port()
    alone = request.param == "alone"  # as python -m norfab_hermes.web serves it: its own Host headers only
    console = HermesConsole(client, hosts=answered_hosts("127.0.0.1", port) if alone else None)

    async def listen() -> tornado.httpserver.HTTPServer:
        host = make_app(console) if alone else make_nfweb_application([console])
        server = tornado.httpserver.HTTPServer(host)
        server.add_sockets([sock])
        return server

    server = loop.run_until_complete(listen())
    loop.run_until_complete(console.start())

    def fetch(path: str, **options) -> HTTPResponse:
        async def go() -> HTTPResponse:
            url = f"http://127.0.0.1:{port}{path}"
            return await AsyncHTTPClient().fetch(url, raise_error=False, follow_redirects=False, **options)

        return loop.run_until_complete(go())

    fetch.alone, fetch.port = alone, port
    yield fetch, client
    server.stop()
    loop.run_until_complete(console.stop())
    loop.close()


PAGES = [
    "/hermes/approvals",
    "/hermes/runs",
    f"/hermes/runs/{WORKER}/fixer/r1",
    f"/hermes/evidence/{WORKER}/fixer/0123456789abcdef",
]


@pytest.mark.parametrize("path", PAGES)
def test_with_identity_off_every_page_says_so_and_escapes_what_it_shows(served, path):
    fetch, _ = served
    page = fetch(path)
    assert page.code == 200, page.body
    body = page.body.decode()
    assert 'id="identity-off"' in body and f"{WORKER}</span>: {OFF}" in body
    assert HOSTILE not in body, "untrusted text is escaped"
    assert page.headers["Content-Security-Policy"] == CSP and "<script>" not in body.replace(
        '<script src="/hermes/static/console.js" defer></script>', ""
    )


def test_an_answer_renders_as_markdown_without_its_html_or_script_links(served):
    fetch, _ = served
    body = fetch(f"/hermes/runs/{WORKER}/fixer/r1").body.decode()
    assert "<strong>bold</strong> &lt;script&gt;window.owned = 1&lt;/script&gt;" in body
    assert 'href="javascript' not in body
    assert 'code class="job-uuid">j-1<' in body


def test_the_evidence_page_says_when_the_digest_does_not_hold(served):
    fetch, _ = served
    body = fetch(f"/hermes/evidence/{WORKER}/fixer/0123456789abcdef").body.decode()
    assert "does NOT match the text below" in body


def test_a_post_needs_the_csrf_token_and_with_identity_off_the_decision_goes_unsigned(served):
    fetch, client = served
    page = fetch("/hermes/approvals")
    cookies = "; ".join(c.split(";")[0] for c in page.headers.get_list("Set-Cookie"))
    token = page.body.decode().split('name="_xsrf" value="')[1].split('"')[0]
    form = {"worker": WORKER, "note": "ok"}
    refused = fetch("/hermes/approvals/a1/approve", method="POST", body=urlencode(form), headers={"Cookie": cookies})
    assert refused.code == 403 and not client.tasks("approve")
    done = fetch(
        "/hermes/approvals/a1/approve",
        method="POST",
        body=urlencode({**form, "_xsrf": token}),
        headers={"Cookie": cookies},
    )
    assert done.code == 302 and client.tasks("approve") == [[WORKER]]
    [(_, _, sent)] = [job for job in client.jobs if job[0] == "approve"]
    assert sent == {"approval_id": "a1", "note": "ok"}, "no proof: the worker takes unsigned requests"
    shown = fetch("/hermes/approvals", headers={"Cookie": cookies}).body.decode()
    assert "approve a1 on hermes-lab-1: approved" in shown


def test_static_files_carry_the_same_policy(served):
    fetch, _ = served
    script = fetch("/hermes/static/console.js")
    assert script.code == 200 and script.headers["Content-Security-Policy"] == CSP
    assert b"new EventSource(" in script.body


def test_nfwebs_health_lists_the_console(served):
    fetch, _ = served
    health = fetch("/api/v1/health")
    if health.code == 200:  # hosted by NFWeb
        assert json.loads(health.body)["applications"]["hermes"] == {"status": "ok", "workers": 1, "sessions": 0}


def test_served_alone_another_sites_name_for_this_address_is_refused(served):
    """A page whose name an attacker rebound to 127.0.0.1 (DNS rebinding) is same-origin with itself only."""
    fetch, _ = served
    rebound = fetch("/hermes/approvals", headers={"Host": f"rebound.example:{fetch.port}"})
    assert rebound.code == (403 if fetch.alone else 200), "NFWeb's host answers any name"
    assert fetch("/hermes/approvals", headers={"Host": f"localhost:{fetch.port}"}).code == 200
