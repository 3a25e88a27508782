"""
``HermesConsole``: the hermes web console as an NFWeb application module
(``norfab.clients.nfweb.application.NFWebApplicationModule``: ``name``,
``routes()``, ``health()``, ``start()``, ``stop()``), and ``make_app`` to host
it alone in Tornado. Client side: it reaches the hermes workers through the
broker with one NorFab client, the way the ``nf#`` shell does, and never
imports the worker or Hermes.
"""

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, Dict, FrozenSet, List, Optional, Tuple, TypeVar

import tornado.web
from jinja2 import Environment, PackageLoader, select_autoescape
from tornado.log import access_log

from ..routing import Router, RoutingError
from ..routing.router import BROKER_TIMEOUT
from . import views
from .routes import routes as console_routes
from .sessions import Session, Sessions

STATIC = Path(__file__).parent / "static"
# seconds the workers' identity lines are kept: each ask is an unsigned get_status, which a worker with
# operators refuses and records in its audit log; asked more often only for browsers not signed in
IDENTITY_TTL, IDENTITY_TTL_SIGNED = 30.0, 600.0
CALL_THREADS = 4  # NorFab client calls in flight at once (the client is blocking and thread-safe)

T = TypeVar("T")


class HermesConsole:
    """
    The console's state: its NorFab client, sessions, templates, and the approvals it has seen.

    Args:
        client: NorFab ``NFPClient`` (``nf.make_client(name="hermes-web")``).
        base: URL path the console's routes live under.
        timeout: seconds to wait for the broker and for each hermes task.
        hosts: the ``Host`` headers it answers (``name:port``), so that a page of another site that
            rebinds its name to this address is refused; None answers any (its host checks them).
    """

    name = "hermes"

    def __init__(
        self,
        client: Any,
        base: str = "/hermes",
        timeout: float = BROKER_TIMEOUT,
        hosts: Optional[FrozenSet[str]] = None,
    ) -> None:
        self.client = client
        self.base = base.rstrip("/")
        self.timeout = timeout
        self.hosts = hosts
        self.sessions = Sessions()
        self.templates = Environment(
            loader=PackageLoader("norfab_hermes.web", "templates"), autoescape=select_autoescape(default=True)
        )
        self.executor = ThreadPoolExecutor(CALL_THREADS, thread_name_prefix="hermes-web")
        self._identity: Tuple[float, Dict[str, Tuple[bool, str]]] = (0.0, {})
        # what the approvals page of a browser without a session (identity off) has read: the same unsigned
        # reads for every such browser, so their live updates read on from the last one, not the whole week
        self.unsigned_history = views.History()
        self.unsigned_questions: Dict[str, str] = {}

    # ------------------------------------------------------------ NFWeb module

    def routes(self) -> List[Any]:
        return console_routes(self, str(STATIC))

    def health(self) -> Dict[str, Any]:
        """ok while the console last found hermes workers alive; how many, and the sessions open."""
        workers = len(self._identity[1])
        return {"status": "ok" if workers else "degraded", "workers": workers, "sessions": len(self.sessions)}

    async def start(self) -> None:
        await self.identity()

    async def stop(self) -> None:
        self.sessions.clear()
        self.executor.shutdown(wait=False, cancel_futures=True)

    # ---------------------------------------------------------------- helpers

    async def call(self, function: Callable[..., T], *args: Any) -> T:
        """``function(*args)`` on the console's threads: NorFab client calls block."""
        return await asyncio.get_running_loop().run_in_executor(self.executor, function, *args)

    def router(self, session: Optional[Session]) -> Router:
        """The shell's router, signing with the session's key (unsigned without one: identity off)."""
        return Router(self.client, self.timeout, signer=session.signer if session else None)

    def render(self, template: str, **context: Any) -> str:
        return self.templates.get_template(template).render(**context)

    async def identity(self, signed: bool = False) -> Dict[str, Tuple[bool, str]]:
        """Each alive hermes worker's identity (on, its line), asked again after ``IDENTITY_TTL``
        (``IDENTITY_TTL_SIGNED`` for a signed-in browser's request)."""
        asked, known = self._identity
        if time.time() - asked > (IDENTITY_TTL_SIGNED if signed else IDENTITY_TTL) or not known:
            known = await self.call(views.identity, self.router(None))
            self._identity = (time.time(), known)
        return known

    def refusals(self, session: Session) -> List[str]:
        """Why workers that take only signed requests refuse this session (a signed get_status each)."""
        router = self.router(session)
        signing = [worker for worker, (on, _) in self._identity[1].items() if on]
        refused = []
        try:
            replies = router.call("get_status", signing or router.select())
        except RoutingError as error:
            return [str(error)]
        for worker, res in replies.items():
            failed, words = views.answer_of(res)
            if failed:
                refused.append(f"{worker}: {words}")
        return refused

    async def approvals(self, session: Optional[Session]) -> Dict[str, Any]:
        """What the approvals page shows: pending ones with their runs' questions (each read once per
        session), then the decided and expired ones from the workers' audit logs (read on from where the
        session's last read stopped)."""
        router = self.router(session)
        history = session.history if session else self.unsigned_history
        # the history first: a decision landing between the two reads shows it pending, then decided
        problems = await self.call(views.approval_history, router, history)
        listing = await self.call(views.pending_approvals, router)
        questions = session.questions if session else self.unsigned_questions
        for approval in listing.items:
            if approval.run_id not in questions:
                state, _ = await self.call(views.run, router, approval.worker, approval.agent, approval.run_id)
                questions[approval.run_id] = state.instructions if state else ""
        questions = {a.run_id: questions[a.run_id] for a in listing.items}  # those no longer pending go
        if session is not None:
            session.questions = questions
        else:
            self.unsigned_questions = questions
        return {
            "listing": listing,
            "decided": history.newest(),
            "history_problems": problems,
            "questions": questions,
            "shown": views.DECIDED_SHOWN,
            "since": views.HISTORY_SINCE,
        }


def log_request(handler: tornado.web.RequestHandler) -> None:
    """Tornado's access log without query strings: a sign-in URL's grant stays out of it."""
    request = handler.request
    status = handler.get_status()
    log = access_log.info if status < 400 else access_log.warning
    log(f"{status} {request.method} {request.path} ({request.remote_ip}) {1000.0 * request.request_time():.1f}ms")


def make_app(console: HermesConsole, debug: bool = False) -> tornado.web.Application:
    """A Tornado application serving the console alone (CSRF tokens checked on every POST)."""
    return tornado.web.Application(
        console.routes(),
        xsrf_cookies=True,
        xsrf_cookie_kwargs={"httponly": True, "samesite": "Strict"},
        log_function=log_request,
        debug=debug,
    )
