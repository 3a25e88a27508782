"""
Every model request a hermes worker sends a provider is counted against
the run it belongs to before it leaves, at the one place all of Hermes'
requests pass: httpx. A request the worker does not make (no run, or the
run's budget spent) is refused before anything is sent, and the sockets of a
turn given up on are shut, so a provider that never answers holds no thread.
"""

import contextlib
import functools
import threading
from typing import Any, Dict

from .compat import current_session_key

# paths of the requests that ask a model for an answer (the ones a provider bills)
MODEL_ENDPOINTS = ("/chat/completions", "/completions", "/responses", "/messages", "/embeddings")


class ModelRequestRefused(Exception):
    """A model request the worker does not make: no run, or the run's budget is spent."""


def meter_model_requests(admit: Any) -> None:
    """Every model request of the worker asks ``admit(session_key)`` before it is sent.

    Hermes makes model requests from its agent loop, its subagents and its
    auxiliary tasks (titles, compression, memory), each through an httpx
    client; ``admit`` returns why a request must not be made (no run it
    belongs to, or its run's budget spent) or None. A refused request is
    never sent. Requests in flight are tracked per session, so that a turn
    given up on can have its sockets closed (:func:`abort_model_requests`).
    """
    import httpx

    def _admit(client: Any, request: Any) -> None:
        if request.method != "POST" or not request.url.path.rstrip("/").endswith(MODEL_ENDPOINTS):
            return
        key = current_session_key()
        reason = admit(key)
        if reason:
            raise ModelRequestRefused(reason)
        # a streamed reply is read after send() returns: the client stays
        # listed until the turn is over (forget) or given up on (abort)
        with _IN_FLIGHT_LOCK:
            _IN_FLIGHT.setdefault(key, {})[id(client)] = client

    def metered(send: Any) -> Any:
        @functools.wraps(send)
        def metered_send(client: Any, request: Any, *args: Any, **kwargs: Any) -> Any:
            _admit(client, request)
            return send(client, request, *args, **kwargs)

        return metered_send

    def ametered(send: Any) -> Any:
        @functools.wraps(send)
        async def metered_send(client: Any, request: Any, *args: Any, **kwargs: Any) -> Any:
            _admit(client, request)
            return await send(client, request, *args, **kwargs)

        return metered_send

    httpx.Client.send = metered(httpx.Client.send)  # type: ignore[method-assign]  # the metering seam
    httpx.AsyncClient.send = ametered(httpx.AsyncClient.send)  # type: ignore[method-assign]


_IN_FLIGHT: Dict[str, Dict[int, Any]] = {}  # session key -> httpx clients that sent model requests in its turn


_IN_FLIGHT_LOCK = threading.Lock()


def forget_model_requests(key: str) -> None:
    """The session's turn is over: its clients are no longer in flight."""
    with _IN_FLIGHT_LOCK:
        _IN_FLIGHT.pop(key, None)


def abort_model_requests(key: str) -> int:
    """Shut down the sockets of every model request the session's turn has open; how many.

    Hermes' own interrupt does this for the agent it knows about; a turn
    given up on before its agent existed, or a subagent's request, would
    otherwise keep a thread waiting on a provider that never answers.
    """
    import socket
    import types

    import agent.agent_runtime_helpers as helpers

    with _IN_FLIGHT_LOCK:
        clients = list(_IN_FLIGHT.pop(key, {}).values())
    closed = 0
    for client in clients:
        for sock in helpers._iter_pool_sockets(types.SimpleNamespace(_client=client)):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
                closed += 1
    return closed
