"""The console's sign-ins and sessions (no NorFab): a grant signs in only the browser that began the sign-in,
once, for the key that sign-in made; sessions end with their grant, when idle, or when signed out."""

import time

import pytest

from norfab_hermes.identity.grant import SessionSigner, make_grant
from norfab_hermes.web import sessions as module
from norfab_hermes.web.sessions import Sessions, SignInRefused

OPERATOR = SessionSigner()  # stands for the operator's SSH key: it signs the same way


def grant_for(sign_in, lifetime=3600.0, operator="lead"):
    return make_grant(OPERATOR, operator, sign_in.signer.public_line, "http://127.0.0.1:9006/hermes", lifetime)


def test_a_grant_signs_in_the_browser_that_began_once_and_names_its_operator():
    sessions = Sessions()
    sign_in = sessions.begin("browser-a")
    with pytest.raises(SignInRefused, match="started in another browser"):
        sessions.complete(sign_in.code, "browser-b", grant_for(sign_in))
    session = sessions.complete(sign_in.code, "browser-a", grant_for(sign_in))
    assert session.operator == "lead" and session.signer is sign_in.signer and session.signer.grant
    assert sessions.get(session.id) is session
    with pytest.raises(SignInRefused, match="unknown or timed out"):
        sessions.complete(sign_in.code, "browser-a", grant_for(sign_in))


def test_a_grant_for_another_sign_in_or_expired_or_forged_is_refused():
    sessions = Sessions()
    mine, other = sessions.begin("browser-a"), sessions.begin("browser-a")
    with pytest.raises(SignInRefused, match="grant: it vouches for session key"):
        sessions.complete(mine.code, "browser-a", grant_for(other))
    with pytest.raises(SignInRefused, match="grant: expired"):
        sessions.complete(mine.code, "browser-a", grant_for(mine, lifetime=-1))
    with pytest.raises(SignInRefused, match="not a console grant"):
        sessions.complete(mine.code, "browser-a", "Zm9yZ2Vk")
    assert len(sessions) == 0


def test_sessions_end_with_their_grant_when_idle_or_signed_out(monkeypatch):
    sessions = Sessions()
    sign_in = sessions.begin("b")
    short = sessions.complete(sign_in.code, "b", grant_for(sign_in, lifetime=2))
    sign_in = sessions.begin("b")
    idle = sessions.complete(sign_in.code, "b", grant_for(sign_in))
    sign_in = sessions.begin("b")
    out = sessions.complete(sign_in.code, "b", grant_for(sign_in))
    sessions.end(out.id)
    assert sessions.get(out.id) is None
    now = time.time()
    monkeypatch.setattr(module.time, "time", lambda: now + 5)
    assert sessions.get(short.id) is None, "its grant expired"
    assert sessions.get(idle.id) is idle
    monkeypatch.setattr(module.time, "time", lambda: now + 5 + module.IDLE + 1)
    assert sessions.get(idle.id) is None, "idle too long"


def test_sign_ins_waiting_are_capped_and_time_out(monkeypatch):
    sessions = Sessions()
    first = sessions.begin("b")
    for _ in range(module.WAITING):
        sessions.begin("b")
    assert sessions.waiting(first.code) is None, "the oldest made room"
    last = sessions.begin("b")
    now = time.time()
    monkeypatch.setattr(module.time, "time", lambda: now + module.SIGN_IN_TIMEOUT + 1)
    assert sessions.waiting(last.code) is None
