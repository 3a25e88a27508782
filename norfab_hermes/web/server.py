"""
Hosting the console alone: a Tornado server for ``HermesConsole`` on one
address, started and stopped with the application module as NFWeb does it.
"""

from contextlib import asynccontextmanager
from typing import Any, AsyncIterator

import tornado.httpserver

from .application import HermesConsole, make_app


@asynccontextmanager
async def console_server(client: Any, host: str, port: int) -> AsyncIterator[str]:
    """Serve the console of NorFab client ``client`` on ``host:port``; yields its URL."""
    console = HermesConsole(client)
    server = tornado.httpserver.HTTPServer(make_app(console))
    server.listen(port, address=host)
    try:
        await console.start()
        yield f"http://{host}:{port}{console.base}"
    finally:
        server.stop()
        await server.close_all_connections()
        await console.stop()
