"""
The console's sign-ins and sessions, in its own memory.

A browser that asks to sign in gets a sign-in: a one-time code, tied to that
browser by a cookie, and a session key (``identity.grant.SessionSigner``)
made here and never sent anywhere. The operator signs a grant for that key
with their own SSH key (``python -m norfab_hermes.web grant``) and opens the
URL it prints in the same browser; the grant must vouch for the sign-in's key
and be unexpired. The session then lasts until its grant expires or it sits
idle for ``IDLE``, whichever comes first; signing out ends it at once. The
worker checks the grant on every request the session signs: this module only
keeps a browser from using a session key that is not its own.
"""

import secrets
import threading
import time
from dataclasses import dataclass, field
from typing import Dict, List, Optional

from ..identity.grant import SessionSigner, granting_key, parse_grant
from ..identity.signatures import SignatureError
from .views import History

SIGN_IN_TIMEOUT = 600.0  # seconds a started sign-in waits for its grant
WAITING = 100  # sign-ins waiting at most: anyone who reaches the console can start one
IDLE = 1800.0  # seconds a session lives without a request


class SignInRefused(Exception):
    """Why a grant does not sign this browser in."""


@dataclass
class SignIn:
    """A sign-in waiting for its grant: its code, the browser it belongs to, the key the grant must name."""

    code: str
    browser: str
    signer: SessionSigner
    started: float


@dataclass
class Session:
    """A browser: the operator its grant names and the key the console signs for it with, until when;
    with identity off an anonymous one (no operator, no key: its requests go unsigned)."""

    id: str
    operator: Optional[str]
    signer: Optional[SessionSigner]
    expires: float
    seen: float
    flashes: List[str] = field(default_factory=list)  # outcomes of its last actions, shown once
    questions: Dict[str, str] = field(default_factory=dict)  # the questions of the runs its approvals page showed
    history: History = field(default_factory=History)  # the decided approvals it read, and up to where

    def flash(self, text: str) -> None:
        self.flashes.append(text)

    def take_flashes(self) -> List[str]:
        taken, self.flashes = self.flashes, []
        return taken


class Sessions:
    """Sign-ins and sessions by their random ids; expired ones are dropped when met."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sign_ins: Dict[str, SignIn] = {}
        self._sessions: Dict[str, Session] = {}

    def begin(self, browser: str) -> SignIn:
        """A new sign-in for the browser whose sign-in cookie is ``browser``."""
        now = time.time()
        sign_in = SignIn(secrets.token_urlsafe(12), browser, SessionSigner(), now)
        with self._lock:
            for code in [c for c, s in self._sign_ins.items() if now - s.started > SIGN_IN_TIMEOUT]:
                del self._sign_ins[code]
            while len(self._sign_ins) >= WAITING:  # the oldest goes first (dicts keep insertion order)
                del self._sign_ins[next(iter(self._sign_ins))]
            self._sign_ins[sign_in.code] = sign_in
        return sign_in

    def waiting(self, code: str) -> Optional[SignIn]:
        """The sign-in of ``code`` while it waits for its grant."""
        with self._lock:
            sign_in = self._sign_ins.get(code)
            if sign_in is not None and time.time() - sign_in.started > SIGN_IN_TIMEOUT:
                del self._sign_ins[code]
                return None
            return sign_in

    def complete(self, code: str, browser: str, grant: str) -> Session:
        """The session a grant opens for the browser that began sign-in ``code`` (used once); SignInRefused."""
        sign_in = self.waiting(code)
        if sign_in is None:
            raise SignInRefused("this sign-in is unknown or timed out: start again from the sign-in page")
        if not secrets.compare_digest(sign_in.browser, browser):
            raise SignInRefused("this sign-in was started in another browser: open the URL where you started it")
        now = time.time()
        try:
            claim, _, _ = parse_grant(grant)
            operator, _ = granting_key(grant, sign_in.signer.public_blob, now)
        except SignatureError as error:
            raise SignInRefused(f"grant: {error}") from None
        sign_in.signer.grant = grant
        session = Session(secrets.token_urlsafe(32), operator, sign_in.signer, float(claim.expires), now)
        with self._lock:
            self._sign_ins.pop(code, None)
            self._add(session, now)
        return session

    def _add(self, session: Session, now: float) -> None:
        """Keep ``session``, dropping the ones that ended meanwhile (the lock held)."""
        for ended in [i for i, s in self._sessions.items() if s.expires <= now or now - s.seen > IDLE]:
            del self._sessions[ended]
        self._sessions[session.id] = session

    def anonymous(self) -> Session:
        """A session for a browser of a console whose workers take unsigned requests (identity off)."""
        now = time.time()
        session = Session(secrets.token_urlsafe(32), None, None, now + IDLE, now)
        with self._lock:
            self._add(session, now)
        return session

    def get(self, session_id: Optional[str]) -> Optional[Session]:
        """The live session of ``session_id`` (its idle clock restarted), None when unknown or expired."""
        if not session_id:
            return None
        now = time.time()
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None:
                return None
            if session.expires <= now or now - session.seen > IDLE:
                del self._sessions[session_id]
                return None
            session.seen = now
            return session

    def end(self, session_id: Optional[str]) -> None:
        with self._lock:
            self._sessions.pop(session_id or "", None)

    def clear(self) -> None:
        with self._lock:
            self._sign_ins.clear()
            self._sessions.clear()

    def __len__(self) -> int:
        return len(self._sessions)
