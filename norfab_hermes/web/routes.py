"""The console's Tornado routes: each page, live part and action under the console's base path."""

from typing import Any, Dict

from .handlers import (
    Agents,
    Approvals,
    Audit,
    AuditExport,
    Console,
    ConsoleStatic,
    Decision,
    Evidence,
    Home,
    Run,
    Runs,
    ScheduleAction,
    Schedules,
    SignInComplete,
    SignInKey,
    SignInPage,
    SignOut,
)
from .live import ApprovalsLive, RunLive


def routes(console: Console, static: str) -> list:
    """The console's Tornado routes under ``console.base``."""
    base, kwargs = console.base, {"console": console}
    run = r"/runs/([^/]+)/([^/]+)/([^/]+)"
    pages: Dict[str, Any] = {
        r"/?": Home,
        r"/approvals": Approvals,
        r"/approvals/live": ApprovalsLive,
        r"/approvals/([^/]+)/(approve|deny)": Decision,
        r"/runs": Runs,
        run: Run,
        run + r"/live": RunLive,
        r"/evidence/([^/]+)/([^/]+)/([^/]+)": Evidence,
        r"/agents": Agents,
        r"/schedules": Schedules,
        r"/schedules/([^/]+)/([^/]+)/([^/]+)/(pause|resume)": ScheduleAction,
        r"/audit": Audit,
        r"/audit/export": AuditExport,
        r"/signin": SignInPage,
        r"/signin/([^/]+)/key": SignInKey,
        r"/signin/([^/]+)": SignInComplete,
        r"/signout": SignOut,
    }
    table: list = [(base + pattern, handler, kwargs) for pattern, handler in pages.items()]
    table.append((base + r"/static/(.*)", ConsoleStatic, {"path": static}))
    return table
