"""
Records are each hermes worker's own (``get_runs``, ``get_audit``,
``verify_audit``): the selected workers answer for themselves, by worker.
"""

from typing import Any, Dict

from .router import Router, RoutingError, Selector

VERIFY_TIMEOUT = 120  # seconds: a worker checks every hash of its audit log


def runs(routes: Router, workers: Selector = None, **filters: Any) -> Dict[str, dict]:
    """``get_runs`` Result dicts of the selected workers, by worker (filters left out when None)."""
    return routes.call("get_runs", routes.select(workers), {k: v for k, v in filters.items() if v is not None})


def audit(routes: Router, worker: str, after: int = 0, **filters: Any) -> dict:
    """One page of ``worker``'s audit log after sequence number ``after``: its Result dict."""
    kwargs = {"after": after, **{k: v for k, v in filters.items() if v is not None}}
    reply = routes.call("get_audit", [worker], kwargs)
    if worker not in reply:
        raise RoutingError(f"hermes worker '{worker}' did not answer get_audit")
    return reply[worker]


def verify_audit(routes: Router, workers: Selector = None) -> Dict[str, dict]:
    """``verify_audit`` Result dicts of the selected workers, by worker."""
    return routes.call("verify_audit", routes.select(workers), timeout=max(routes.timeout, VERIFY_TIMEOUT))
