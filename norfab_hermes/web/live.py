"""
The live parts of the console's pages as server-sent events: the approvals (pending and decided)
and a run's timeline while it is in flight. The console reads the workers for the browser, whose
EventSource only listens (no polling from the page; the CSP's ``connect-src 'self'``).
"""

import asyncio
from typing import Awaitable, Callable, Tuple

import tornado.iostream

from . import views
from .handlers import ConsoleHandler

# seconds between a live stream's reads of the workers: the console reads them for the browser, which only listens
LIVE_SECONDS = 1.0


class LiveStream(ConsoleHandler):
    """A live part of a page as server-sent events: its fragment each time it changes, then ``done``
    once it will not change again. The browser's EventSource only listens (no polling from the page)."""

    closed = False

    def on_connection_close(self) -> None:
        self.closed = True

    async def stream(self, read: Callable[[], Awaitable[Tuple[str, bool]]]) -> None:
        self.set_header("Content-Type", "text/event-stream; charset=UTF-8")
        last = None
        try:
            while not self.closed:
                html, done = await read()
                if html != last:
                    self.write("".join(f"data: {line}\n" for line in html.splitlines() or [""]) + "\n")
                    last = html
                if done:
                    self.write("event: done\ndata: done\n\n")
                await self.flush()
                if done:
                    break
                await asyncio.sleep(LIVE_SECONDS)
        except (tornado.iostream.StreamClosedError, asyncio.CancelledError):
            return  # the page went away, or the console is stopping
        self.finish()


class ApprovalsLive(LiveStream):
    """The pending and decided approvals, pushed when a decision or a new approval changes them."""

    async def get(self) -> None:
        if self.allowed():
            await self.stream(self.read)

    async def read(self) -> Tuple[str, bool]:
        return self.fragment("_approvals.html", **await self.console.approvals(self.session)), False


class RunLive(LiveStream):
    """A run's timeline while it is in flight: each tool call (with its job) pushed as it lands."""

    async def get(self, worker: str, agent: str, run_id: str) -> None:
        if not self.allowed():
            return
        router = self.console.router(self.session)

        async def read() -> Tuple[str, bool]:
            state, problem = await self.console.call(views.run, router, worker, agent, run_id)
            html = self.fragment("_timeline.html", state=state, problem=problem, markdown=views.markdown)
            return html, state is None or state.state == "finished"

        await self.stream(read)
