"""
Records are each hermes worker's own (``get_runs``, ``get_audit``,
``verify_audit``): the selected workers answer for themselves, by worker.
Workers sharing one record (``records.backend: postgresql``) each answer for
the whole fleet, including workers that are down: their answers name the
record, and one answer per record is kept.
"""

from typing import Any, Dict, List, Optional, Set, Tuple

from ..models import AuditEntry, AuditPage
from .router import Replies, Reply, Router, RoutingError, Selector

VERIFY_TIMEOUT = 120  # seconds: a worker checks every hash of its audit log
AUDIT_PAGE = 1000  # entries asked for at a time by an export


def runs(routes: Router, workers: Selector = None, **filters: Any) -> Replies:
    """``get_runs`` Result dicts of the selected workers, by worker (filters left out when None)."""
    kwargs = {k: v for k, v in filters.items() if v is not None}
    return one_per_record(routes.call("get_runs", routes.select(workers), kwargs))


def audit(routes: Router, worker: str, after: int = 0, **filters: Any) -> Reply:
    """One page of ``worker``'s audit log after sequence number ``after``: its Result dict."""
    kwargs = {"after": after, **{k: v for k, v in filters.items() if v is not None}}
    reply = routes.call("get_audit", [worker], kwargs)
    if worker not in reply:
        raise RoutingError(f"hermes worker '{worker}' did not answer get_audit")
    return reply[worker]


def export(routes: Router, workers: Selector = None, **filters: Any) -> Tuple[List[AuditEntry], Dict[str, int]]:
    """Every matching audit entry of every selected worker, oldest first per worker (one chain per shared
    record), and how many came from each worker; RoutingError naming the worker whose page failed."""
    entries: List[AuditEntry] = []
    counts: Dict[str, int] = {}
    shared: Set[Optional[str]] = set()  # records read already: the workers sharing one give one chain
    for worker in routes.select(workers):
        after = 0
        while True:
            res = audit(routes, worker, after, limit=AUDIT_PAGE, **filters)
            if res.get("failed") or res.get("result") is None:
                raise RoutingError(f"{worker}: {'; '.join(res.get('errors') or [str(res.get('status'))])}")
            page = AuditPage.model_validate(res["result"])
            if after == 0 and page.record is not None:
                if page.record in shared:
                    break
                shared.add(page.record)
            entries += page.entries
            counts[worker] = counts.get(worker, 0) + len(page.entries)
            if page.next_after is None:
                break
            after = page.next_after
    return entries, counts


def verify_audit(routes: Router, workers: Selector = None) -> Replies:
    """``verify_audit`` Result dicts of the selected workers, by worker."""
    replies = routes.call("verify_audit", routes.select(workers), timeout=max(routes.timeout, VERIFY_TIMEOUT))
    return one_per_record(replies)


def record_of(res: Optional[Reply]) -> Optional[str]:
    """The shared record a Result dict answered from; None for a worker's own record or a failure."""
    res = res or {}
    result = res.get("result")
    return result.get("record") if isinstance(result, dict) and not res.get("failed") else None


def one_per_record(replies: Replies) -> Replies:
    """The replies, those of workers sharing a record counted once (the first worker's, by name)."""
    seen, kept = set(), {}
    for worker, res in sorted(replies.items()):
        record = record_of(res)
        if record is None or record not in seen:
            kept[worker] = res
            seen.add(record)
    return kept
