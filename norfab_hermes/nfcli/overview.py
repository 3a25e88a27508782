"""
What the hermes workers serve, from the ``nf#`` shell: ``hermes agents``,
``hermes status``, ``hermes sessions AGENT`` and ``hermes session AGENT ID``.
The tables are drawn by :mod:`.views`; ``status`` adds the change envelope of
each worker (:mod:`.changes`).
"""

from typing import Any, Optional

from pydantic import Field, StrictInt
from rich.console import Group, RenderableType

from . import changes
from .common import WorkersOption, as_str, guarded, misparsed, router
from .views import agents_view, failed, session_view, sessions_view, status_view


class HermesAgentsCommand(WorkersOption):
    @staticmethod
    def run(workers: Optional[str] = None, **kwargs: Any) -> RenderableType:
        return misparsed(kwargs) or guarded(lambda: agents_view(router().agents(as_str(workers))))


class HermesStatusCommand(WorkersOption):
    @staticmethod
    def run(workers: Optional[str] = None, **kwargs: Any) -> RenderableType:
        def render() -> RenderableType:
            replies = router().status(as_str(workers))
            return Group(status_view(replies), *changes.envelope_views(changes.envelopes(replies)))

        return misparsed(kwargs) or guarded(render)


class HermesSessionsCommand(WorkersOption):
    limit: Optional[StrictInt] = Field(None, description="Newest sessions to list (default 20)")

    @staticmethod
    def run(agent: str, workers: Optional[str] = None, limit: Optional[int] = None, **kwargs: Any) -> RenderableType:
        def render() -> RenderableType:
            routes = router()
            target = routes.resolve(str(agent), as_str(workers))
            res = routes.one("get_sessions", target, {"limit": limit or 20})
            return failed(res) or sessions_view(target, res["result"])

        return misparsed(kwargs) or guarded(render)


def show_session(agent: str, session_id: str, workers: Optional[str]) -> RenderableType:
    """``hermes session AGENT SESSION``: one session's conversation."""
    routes = router()
    target = routes.resolve(agent, workers, session_id)
    res = routes.one("get_session", target, {"session_id": session_id})
    return failed(res) or session_view(res["result"])
