"""
Hosting the console alone: a Tornado server for ``HermesConsole`` on one
address, started and stopped with the application module as NFWeb does it.
"""

from contextlib import asynccontextmanager
from typing import Any, AsyncIterator, Iterable

import tornado.httpserver

from .application import HermesConsole, make_app

LOCAL_NAMES = ("127.0.0.1", "localhost", "[::1]")


def answered_hosts(host: str, port: int, more: Iterable[str] = ()) -> frozenset:
    """The Host headers the console answers: its address and this host's loopback names, with its port,
    and ``more`` (e.g. the name a reverse proxy forwards, ``console.example.net``) as given."""
    names = {host, *LOCAL_NAMES} if host not in ("0.0.0.0", "::") else set(LOCAL_NAMES)
    return frozenset({f"{name}:{port}" for name in names} | {name.lower() for name in more})


@asynccontextmanager
async def console_server(client: Any, host: str, port: int, allow: Iterable[str] = ()) -> AsyncIterator[str]:
    """Serve the console of NorFab client ``client`` on ``host:port``; yields its URL. ``allow``: more
    Host headers it answers besides its address and loopback names."""
    console = HermesConsole(client, hosts=answered_hosts(host, port, allow))
    server = tornado.httpserver.HTTPServer(make_app(console))
    server.listen(port, address=host)
    try:
        await console.start()
        yield f"http://{host}:{port}{console.base}"
    finally:
        server.stop()
        await server.close_all_connections()
        await console.stop()
