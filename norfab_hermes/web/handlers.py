"""
The console's Tornado handlers: pages rendered from autoescaped templates,
the two decisions and sign-in (the live parts of pages are in ``live``).

Every response carries a strict Content-Security-Policy (scripts and styles
from the console's own files only, no inline script or style, no framing);
Tornado checks a CSRF token on every POST (``xsrf_cookies``). A page needs a
signed-in session whenever some worker takes only operators' requests.
"""

import json
import logging
import secrets
from typing import Any, Callable, Dict, FrozenSet, List, Optional, Protocol, Tuple, TypeVar

import tornado.web
from markupsafe import Markup

from ..routing import Router
from . import views
from .sessions import Session, Sessions, SignInRefused

log = logging.getLogger(__name__)
T = TypeVar("T")

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
SESSION_COOKIE = "hermes_console"
SIGN_IN_COOKIE = "hermes_sign_in"


class Console(Protocol):
    """What the handlers use of the console (``application.HermesConsole``)."""

    base: str
    client: Any
    sessions: Sessions
    hosts: Optional[FrozenSet[str]]

    async def identity(self, signed: bool = False) -> Dict[str, Tuple[bool, str]]: ...

    async def call(self, function: Callable[..., T], *args: Any) -> T: ...

    def router(self, session: Optional[Session]) -> Router: ...

    def render(self, template: str, **context: Any) -> str: ...

    def refusals(self, session: Session) -> List[str]: ...

    async def approvals(self, session: Optional[Session]) -> Dict[str, Any]: ...


def security_headers(handler: tornado.web.RequestHandler) -> None:
    handler.set_header("Content-Security-Policy", CSP)
    handler.set_header("X-Content-Type-Options", "nosniff")
    handler.set_header("Referrer-Policy", "no-referrer")
    handler.set_header("Cross-Origin-Opener-Policy", "same-origin")
    handler.set_header("X-Frame-Options", "DENY")


class ConsoleStatic(tornado.web.StaticFileHandler):
    """The console's script and style sheet, under the same policy as its pages."""

    def set_extra_headers(self, path: str) -> None:
        security_headers(self)
        self.set_header("Cache-Control", "no-cache")


class ConsoleHandler(tornado.web.RequestHandler):
    """Base of the console's handlers: the session, the identity banner, rendering."""

    console: Console
    session: Optional[Session]

    def initialize(self, console: Console) -> None:
        self.console = console
        self.session = None

    def set_default_headers(self) -> None:
        security_headers(self)
        self.set_header("Cache-Control", "no-store")

    async def prepare(self) -> None:
        if self.console.hosts is not None and self.request.host.lower() not in self.console.hosts:
            # a page of another site whose name now points here (DNS rebinding) reads and posts as same-origin
            raise tornado.web.HTTPError(403, f"Host {self.request.host!r} is not this console's")
        if self.request.method == "POST":
            self.check_xsrf_cookie()  # also when an NFWeb host that does not turn xsrf_cookies on serves it
        self.session = self.console.sessions.get(self.get_cookie(SESSION_COOKIE))
        self.identity = await self.console.identity(bool(self.session and self.session.operator))
        if self.session is None and not self.signing_required:
            self.session = self.console.sessions.anonymous()
            self.set_session_cookie(self.session)

    def set_session_cookie(self, session: Session) -> None:
        self.set_cookie(SESSION_COOKIE, session.id, httponly=True, samesite="Strict", path=self.console.base)

    @property
    def signing_required(self) -> bool:
        """Whether some worker takes only operators' signed requests (then every page needs a session)."""
        return any(on for on, _ in self.identity.values())

    def allowed(self) -> bool:
        """Whether this request may go on; otherwise it was answered (sign-in page, or 403 for the rest)."""
        if not self.signing_required or (self.session is not None and self.session.operator):
            return True
        if self.request.method == "GET" and not self.request.path.endswith("/live"):
            self.redirect(f"{self.console.base}/signin")
        else:
            self.set_status(403)
            self.finish("sign in first: this console's session expired or never began")
        return False

    def page(self, template: str, **context: Any) -> None:
        """Render a page with what every page shows: who acts, the workers' identity, last outcomes."""
        off = {worker: line for worker, (on, line) in self.identity.items() if not on}
        self.finish(
            self.console.render(
                template,
                base=self.console.base,
                operator=self.session.operator if self.session else None,
                identity_off=off,
                signing_required=self.signing_required,
                client=self.console.client.name,
                flashes=self.session.take_flashes() if self.session else [],
                xsrf=Markup(self.xsrf_form_html()),
                **context,
            )
        )

    def fragment(self, template: str, **context: Any) -> str:
        return self.console.render(template, base=self.console.base, xsrf=Markup(self.xsrf_form_html()), **context)


class Home(ConsoleHandler):
    def get(self) -> None:
        self.redirect(f"{self.console.base}/approvals")


class Approvals(ConsoleHandler):
    """Pending approvals of every worker, with their diffs and the decision form; decided ones below."""

    async def get(self) -> None:
        if self.allowed():
            self.page("approvals.html", **await self.console.approvals(self.session))


class Decision(ConsoleHandler):
    """``approve`` or ``deny`` one approval with the operator's note: the worker checks the session's grant."""

    async def post(self, approval_id: str, task: str) -> None:
        if not self.allowed():
            return
        worker = self.get_body_argument("worker")
        note = self.get_body_argument("note", "").strip()
        done, words = await self.console.call(
            views.decide, self.console.router(self.session), task, approval_id, worker, note
        )
        who = (self.session and self.session.operator) or f"client {self.console.client.name} (identity off)"
        log.info(f"Console {task} of approval {approval_id} on {worker} by {who}: {'done' if done else 'refused'}")
        if self.session is not None:
            self.session.flash(words)
        self.redirect(f"{self.console.base}/approvals")


class Runs(ConsoleHandler):
    """Recorded runs of every worker, newest first, with some of get_runs' filters."""

    async def get(self) -> None:
        if not self.allowed():
            return
        filters = {name: self.get_query_argument(name, "").strip() for name in views.RUN_FILTERS}
        worker = self.get_query_argument("worker", "").strip()
        listing = await self.console.call(views.runs, self.console.router(self.session), filters, worker)
        self.page("runs.html", listing=listing, filters=filters, worker=worker)


class Run(ConsoleHandler):
    """One run's timeline: instruction, events, tool calls with their NorFab job UUIDs, approvals, answer."""

    async def get(self, worker: str, agent: str, run_id: str) -> None:
        if not self.allowed():
            return
        state, problem = await self.console.call(views.run, self.console.router(self.session), worker, agent, run_id)
        self.page(
            "run.html",
            state=state,
            problem=problem,
            worker=worker,
            agent=agent,
            run_id=run_id,
            markdown=views.markdown,
        )


class Evidence(ConsoleHandler):
    """One artifact whole: the tool result as the worker kept it, its digest checked, its device, command, job."""

    async def get(self, worker: str, agent: str, artifact_id: str) -> None:
        if not self.allowed():
            return
        router = self.console.router(self.session)
        item, problem = await self.console.call(views.artifact, router, worker, agent, artifact_id)
        holds = views.digest_holds(item) if item else False
        self.page("evidence.html", item=item, problem=problem, holds=holds, worker=worker, artifact_id=artifact_id)


class Agents(ConsoleHandler):
    """Every agent of every worker: its model, state, change tools, today's budget, runs in flight."""

    async def get(self) -> None:
        if self.allowed():
            listing = await self.console.call(views.agents, self.console.router(self.session))
            self.page("agents.html", listing=listing)


class Schedules(ConsoleHandler):
    """Every agent's scheduled checks: history strip, next run, pause and resume."""

    async def get(self) -> None:
        if self.allowed():
            listing = await self.console.call(views.schedules, self.console.router(self.session))
            self.page("schedules.html", listing=listing)


class ScheduleAction(ConsoleHandler):
    """Pause or resume one schedule: the worker checks the operator's role (admin) for the agent."""

    async def post(self, worker: str, agent: str, schedule_id: str, action: str) -> None:
        if not self.allowed():
            return
        router = self.console.router(self.session)
        done, words = await self.console.call(views.pause_or_resume, router, action, worker, agent, schedule_id)
        who = (self.session and self.session.operator) or f"client {self.console.client.name} (identity off)"
        log.info(
            f"Console {action} of schedule {schedule_id} of {agent} on {worker} by {who}: {'done' if done else 'refused'}"
        )
        if self.session is not None:
            self.session.flash(words)
        self.redirect(f"{self.console.base}/schedules")


class Audit(ConsoleHandler):
    """The workers' audit logs: checked on request (every hash, every link, every kept signature), exported."""

    async def get(self) -> None:
        if not self.allowed():
            return
        checks = None
        if self.get_query_argument("verify", ""):
            checks = await self.console.call(views.audit_checks, self.console.router(self.session))
        self.page("audit.html", checks=checks)


class AuditExport(ConsoleHandler):
    """Every worker's audit log as one JSON-lines file, as ``hermes audit export`` writes it."""

    async def get(self) -> None:
        if not self.allowed():
            return
        text, problem = await self.console.call(views.audit_export, self.console.router(self.session))
        if problem:
            self.set_status(502)
            self.page("audit.html", checks=views.Listing(problems=[problem]))
            return
        self.set_header("Content-Type", "application/x-ndjson; charset=UTF-8")
        self.set_header("Content-Disposition", 'attachment; filename="hermes-audit.jsonl"')
        self.finish(text)


class SignInPage(ConsoleHandler):
    """Start a sign-in: a code tied to this browser and the command that grants it."""

    def get(self) -> None:
        browser = self.get_cookie(SIGN_IN_COOKIE) or secrets.token_urlsafe(32)
        self.set_cookie(SIGN_IN_COOKIE, browser, httponly=True, samesite="Strict", path=self.console.base)
        sign_in = self.console.sessions.begin(browser)
        url = f"{self.request.protocol}://{self.request.host}{self.console.base}/signin/{sign_in.code}"
        self.page("signin.html", url=url, problem=None)


class SignInKey(ConsoleHandler):
    """The session key a sign-in's grant must name, for the grant command (public: it proves nothing)."""

    def get(self, code: str) -> None:
        sign_in = self.console.sessions.waiting(code)
        if sign_in is None:
            self.set_status(404)
            self.finish({"error": "this sign-in is unknown or timed out: start again from the sign-in page"})
            return
        self.set_header("Content-Type", "application/json; charset=UTF-8")
        console = f"{self.request.protocol}://{self.request.host}{self.console.base}"
        self.finish(json.dumps({"key": sign_in.signer.public_line, "console": console}))


class SignInComplete(ConsoleHandler):
    """The one-time sign-in URL: the grant checked against this browser's sign-in, then by the workers."""

    async def get(self, code: str) -> None:
        try:
            session = self.console.sessions.complete(
                code, self.get_cookie(SIGN_IN_COOKIE) or "", self.get_query_argument("grant", "")
            )
        except SignInRefused as error:
            self.set_status(403)
            self.page("signin.html", url=None, problem=str(error))
            return
        refused = await self.console.call(self.console.refusals, session)
        if refused:
            self.console.sessions.end(session.id)
            self.set_status(403)
            self.page("signin.html", url=None, problem="; ".join(refused))
            return
        log.info(f"Console sign-in of operator '{session.operator}'")
        self.clear_cookie(SIGN_IN_COOKIE, path=self.console.base)
        self.set_session_cookie(session)
        self.redirect(f"{self.console.base}/approvals")


class SignOut(ConsoleHandler):
    def post(self) -> None:
        if self.session is not None:
            log.info(f"Console sign-out of operator '{self.session.operator}'")
        self.console.sessions.end(self.get_cookie(SESSION_COOKIE))
        self.clear_cookie(SESSION_COOKIE, path=self.console.base)
        self.redirect(f"{self.console.base}/signin")
