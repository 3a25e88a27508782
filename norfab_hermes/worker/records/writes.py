"""
The named writes of the records (a run started, running, a tool call, ended, an approval, an audit note,
the day's usage): each one's arguments as JSON values, and the transaction it makes of them.

A write is a name and JSON arguments so that it can wait in the outbox (the fleet's record: it is kept
on the worker's disk first) and be made from there later, by another thread or after a restart, the same
way it is made at once in the worker's own SQLite record.
"""

from typing import Any, Callable, Dict, Optional

from pydantic import BaseModel

from ...models import ApprovalInfo, RunStateData
from . import approvals, runs, usage
from .runs import RunRow
from .statements import Connection

AUDIT_TEXT_CHARS = 1000  # of the instructions an audit entry keeps (the run record has them whole)
LOOKUP = object()  # the case of a run an entry names is not in the write: read from the record

# append(db, kind, agent, run_id, actor, data, at, signed, case): an audit entry in the write's transaction
Append = Callable[..., None]


def encoded(payload: Dict[str, Any]) -> Dict[str, Any]:
    """A write's arguments as JSON values (what the outbox keeps): models dumped, a run's row by field."""
    return {
        key: runs.encode_row(value)
        if isinstance(value, RunRow)
        else value.model_dump(mode="json")
        if isinstance(value, BaseModel)
        else value
        for key, value in payload.items()
    }


def run_of(name: str, payload: Dict[str, Any]) -> Optional[str]:
    """The run write ``name`` is about, if any."""
    if name == "run_started":
        row = payload["row"]
        return row.run_id if isinstance(row, RunRow) else str(row["run_id"])
    if name == "run_ended":
        state = payload["state"]
        return state.run_id if isinstance(state, RunStateData) else state["run_id"]
    if name == "approval":
        info = payload["info"]
        return info.run_id if isinstance(info, ApprovalInfo) else info["run_id"]
    run_id: Optional[str] = payload.get("run_id")
    return run_id


def body(name: str, p: Dict[str, Any], append: Append) -> Callable[[Connection], Any]:
    """The transaction of write ``name`` of payload ``p`` (its ``case``: the case of its run, when known)."""
    at, signed, case = p["at"], p["signed"], p.get("case", LOOKUP)

    def entry(db: Connection, kind: str, agent: Any, run_id: Any, actor: Any, data: Dict[str, Any]) -> None:
        append(db, kind, agent, run_id, actor, data, at, signed, case)

    if name == "run_started":
        row = p["row"] if isinstance(p["row"], RunRow) else runs.decode_row(p["row"])
        details: Dict[str, Any] = {
            "instructions": row.instructions[:AUDIT_TEXT_CHARS],
            "session_id": row.session_id,
            "schedule_id": row.schedule_id,
            "job_uuid": row.job_uuid,
            "parent_run_id": row.parent_run_id,
            "dedupe_key": row.dedupe_key,
            "provenance": row.provenance.model_dump() if row.provenance else None,
        }

        def started(db: Connection) -> None:
            runs.insert(db, row)
            entry(db, "run.started", row.agent, row.run_id, row.client, details)

        return started
    if name == "run_running":
        return lambda db: runs.set_state(db, p["run_id"], "running", p["session_id"])
    if name == "tool_call":
        calls = p["calls"]

        def called(db: Connection) -> None:
            runs.set_tool_calls(db, p["run_id"], calls)
            entry(db, "tool.call", p["agent"], p["run_id"], None, calls[-1])

        return called
    if name == "run_ended":
        state, finished = RunStateData.model_validate(p["state"]), p["finished"]  # a model stays one
        result = state.result
        ended: Dict[str, Any] = {
            "stop_reason": state.stop_reason,
            "session_id": state.session_id,
            "tool_calls": len(result.tool_calls) if result else 0,
            "total_tokens": result.usage.total_tokens if result else 0,
            "cost_usd": result.usage.cost_usd if result else None,
        }

        def end(db: Connection) -> None:
            runs.finish(db, state, finished)
            entry(db, "run.ended", state.agent, state.run_id, state.client, ended)

        return end
    if name == "approval":
        info, kind = ApprovalInfo.model_validate(p["info"]), p["kind"]
        asked: Dict[str, Any] = {
            "approval_id": info.approval_id,
            "tool": info.tool,
            "target": info.target,
            "arguments_digest": info.arguments_digest,
            "state": info.state,
            "decided_by": info.decided_by,
            "note": info.note,
        }
        if info.change_digest:  # a change: what was approved, on which devices
            asked.update(change_digest=info.change_digest, devices=info.devices)
        waiting = "waiting_for_approval" if info.state == "pending" else "running"

        def decided(db: Connection) -> None:
            approvals.save(db, info)
            runs.set_state(db, info.run_id, waiting)
            entry(db, f"approval.{kind}", info.agent, info.run_id, p["actor"], asked)

        return decided
    if name == "note":
        return lambda db: entry(db, p["kind"], p["agent"], p["run_id"], p["actor"], p["data"])
    if name == "add_usage":
        return lambda db: usage.add(db, p["agent"], p["day"], p["tokens"], p["cost"])
    raise ValueError(f"unknown records write '{name}'")
