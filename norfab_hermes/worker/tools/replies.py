"""
A NorFab reply as the model reads it: per worker status, errors and result, redacted. A result
older than the run, or no data for the hosts the call named, fails the call.
"""

import json
import time
from datetime import datetime, timezone
from typing import Any, Dict, List, Optional, Set, Tuple

from ...safety.changes import HOST_FILTERS
from ...safety.redact import redact
from .calls import ToolError
from .specs import ToolSpec

CLOCK_SKEW = 60.0  # seconds a worker's clock may be behind ours before its result counts as stale


def ctime_seconds(text: Any) -> Optional[float]:
    """Seconds since the epoch of a NorFab ``time.ctime()`` timestamp (worker local time)."""
    try:
        return time.mktime(time.strptime(str(text)))
    except (TypeError, ValueError, OverflowError):
        return None


def devices_in(reply: Any) -> Set[str]:
    """The hosts a nornir reply holds results for (a nornir result is keyed by host)."""
    return {
        host
        for result in (reply or {}).values()
        if isinstance(result, dict) and isinstance(result.get("result"), dict)
        for host in result["result"]
    }


def render(
    spec: ToolSpec,
    uuid: Optional[str],
    reply: Any,
    arguments: Dict[str, Any],
    secrets: List[str],
    since: Optional[float] = None,
    artifacts: Optional[List[str]] = None,
) -> Tuple[str, str, Optional[str]]:
    """The model's view of a NorFab reply: per worker status, errors and result, ``secrets`` masked.

    A worker's result produced before ``since`` (the run's start) is no
    evidence of the network now: it is marked stale and the call fails.
    """
    target = spec.target
    if not reply:
        error = f"job {uuid} for {target.service}.{target.task} got no reply: no worker matched '{target.workers}' or it timed out"
        raise ToolError(error)
    workers = {}
    errors = []
    for worker, result in reply.items():
        entry = {"status": result.get("status"), "failed": bool(result.get("failed"))}
        if result.get("status") == "no_match":
            entry["errors"] = ["no hosts matched the host filters"]
            errors.append(f"{worker}: no hosts matched the host filters")
        elif result.get("failed") or result.get("status") in ("timeout", "error", "failed"):
            entry["failed"] = True
            entry["errors"] = redact(
                result.get("errors") or [f"task failed with status {result.get('status')}"], secrets
            )
            errors.append(f"{worker}: {'; '.join(entry['errors'])}")
        if result.get("result") is not None:
            # failed results often carry the per-device reason; device
            # output is redacted as data, before it is encoded
            entry["result"] = redact(result.get("result"), secrets)
        produced = ctime_seconds(result.get("task_completed"))
        if since is not None and produced is not None and produced < since - CLOCK_SKEW:
            entry["stale"] = f"produced at {result['task_completed']}, before this run started"
            errors.append(f"{worker}: result is stale ({entry['stale']}); call again for current data")
        workers[worker] = entry
    named_hosts = (set(arguments) | set(target.kwargs)) & HOST_FILTERS
    if not errors and named_hosts and not any(w.get("result") for w in workers.values()):
        # NorFab can mark a job completed with no data when jobs to one
        # nornir worker overlap; it is not evidence that hosts have nothing
        errors.append("the task completed but returned no data for the requested hosts; retry the call")
    ok = not errors
    payload = {
        "ok": ok,
        "tool": spec.name,
        "task": f"{target.service}.{target.task}",
        "job_uuid": uuid,
        "collected_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "workers": workers,
    }
    failure = "; ".join(errors) if errors else None
    if failure:
        payload["error"] = failure
    if artifacts:
        payload["artifacts"] = artifacts  # kept whole: the records tool and the evidence task read them
    return json.dumps(payload, default=str), "completed" if ok else "failed", failure
