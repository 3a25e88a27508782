"""
Run records: one row per run from the moment it is accepted, updated as it
goes (running, waiting for an approval, each tool call) and completed when
it ends. The columns are what ``get_runs`` filters and shows; the run's state
as ``get_run`` shows it (events, result envelope) is kept compressed in a
table of its own, so that the rows stay small and many share a page.
"""

import dataclasses
import json
import sqlite3
import zlib
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Dict, List, Optional, Tuple

from ...models import PREVIEW_CHARS, GetRunsInput, Provenance, RunsPage, RunStateData, RunSummary, RunUsage
from .statements import Connection, Row

PROVENANCE = tuple(Provenance.model_fields)  # one column each
TRIGRAM = 3  # characters: a shorter text finds no trigram to look up
TEXT_SAMPLE = 1000  # newest runs the text's trigrams are weighed on (fewer left by the other filters: read those)
INDEX_COST = 6  # a run the trigram index names costs about as much as reading 6 runs (measured at 1M runs)
TEXT_TRIGRAMS = 40  # of a long text, the first this many trigrams are weighed
LOOKED_UP = 3  # the rarest this many are looked up (each more narrows less; a common one is long to read)
EQUAL_FILTERS = ("agent", "state", "stop_reason", "schedule_id", "case_id", *PROVENANCE)


@dataclass(frozen=True)
class RunRow:
    """What is known of a run when it is accepted."""

    run_id: str
    agent: str
    worker: str
    started: float  # seconds since the epoch
    instructions: str
    session_id: Optional[str] = None
    schedule_id: Optional[str] = None
    job_uuid: Optional[str] = None
    client: Optional[str] = None
    dedupe_key: Optional[str] = None
    parent_run_id: Optional[str] = None
    case_id: Optional[str] = None
    provenance: Optional[Provenance] = None


def encode_row(row: RunRow) -> Dict[str, Any]:
    """A run's row as JSON (the outbox keeps it while the fleet's record does not answer)."""
    values = dataclasses.asdict(row)
    values["provenance"] = row.provenance.model_dump() if row.provenance else None
    return values


def decode_row(values: Dict[str, Any]) -> RunRow:
    known = values.get("provenance")
    return RunRow(**{**values, "provenance": Provenance(**known) if known else None})


def iso(seconds: Optional[float]) -> Optional[str]:
    return datetime.fromtimestamp(seconds, timezone.utc).isoformat(timespec="milliseconds") if seconds else None


def epoch(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


def pack(state: RunStateData) -> bytes:
    """The run's state for get_run, without what is kept elsewhere (instructions, approvals, columns)."""
    kept: Dict[str, Any] = {
        "instructions": True,
        "approvals": True,
        "case_id": True,
        "provenance": True,
        "result": {"approvals"},
    }
    return zlib.compress(state.model_dump_json(exclude=kept, exclude_none=True).encode())


def detail(db: Connection, run_id: str) -> Optional[Dict[str, Any]]:
    """The run's state as it ended (approvals left out), or None for a run in flight."""
    row = db.execute("SELECT detail FROM run_details WHERE run_id = ?", (run_id,)).fetchone()
    return json.loads(zlib.decompress(row["detail"])) if row else None


def insert(db: Connection, row: RunRow) -> None:
    values = {field.name: getattr(row, field.name) for field in dataclasses.fields(row) if field.name != "provenance"}
    values.update(row.provenance.model_dump() if row.provenance else {})
    db.execute(
        f"INSERT INTO runs (state, {', '.join(values)}) VALUES ('queued', {', '.join('?' * len(values))})",
        list(values.values()),
    )


def provenance_of(row: Row) -> Optional[Provenance]:
    """What answered the run; None for a run an older worker recorded."""
    known = {name: row[name] for name in PROVENANCE if row[name] is not None}
    return Provenance(**known) if known else None


def case_of(db: Connection, run_id: str) -> Optional[str]:
    row = db.execute("SELECT case_id FROM runs WHERE run_id = ?", (run_id,)).fetchone()
    return row["case_id"] if row else None


def set_state(db: Connection, run_id: str, state: str, session_id: Optional[str] = None) -> None:
    """A run in flight changed state (running, waiting_for_approval); its session, once known."""
    db.execute(
        "UPDATE runs SET state = ?, session_id = coalesce(?, session_id) WHERE run_id = ? AND finished IS NULL",
        (state, session_id, run_id),
    )


def set_tool_calls(db: Connection, run_id: str, calls: List[Dict[str, Any]]) -> None:
    db.execute(
        "UPDATE runs SET tool_calls = ?, calls_so_far = ? WHERE run_id = ?", (len(calls), json.dumps(calls), run_id)
    )


def calls_so_far(row: Row) -> List[Dict[str, Any]]:
    calls: List[Dict[str, Any]] = json.loads(row["calls_so_far"] or "[]")
    return calls


def finish(db: Connection, state: RunStateData, finished: float) -> None:
    """The run ended: its outcome in the columns, its whole state beside them."""
    result = state.result
    usage = result.usage if result else RunUsage()
    db.execute(
        "UPDATE runs SET state = 'finished', stop_reason = ?, finished = ?, session_id = coalesce(?, session_id), "
        "response = ?, tool_calls = coalesce(?, tool_calls), calls_so_far = NULL, api_calls = ?, input_tokens = ?, "
        "output_tokens = ?, total_tokens = ?, cost_usd = ? WHERE run_id = ?",
        (
            state.stop_reason,
            finished,
            state.session_id,
            result.response if result else "",
            len(result.tool_calls) if result else None,
            usage.api_calls,
            usage.input_tokens,
            usage.output_tokens,
            usage.total_tokens,
            usage.cost_usd,
            state.run_id,
        ),
    )
    db.execute(
        "INSERT INTO run_details (run_id, detail) VALUES (?, ?) ON CONFLICT (run_id) DO UPDATE SET detail = excluded.detail",
        (state.run_id, pack(state)),
    )


def get(db: Connection, run_id: str) -> Optional[Row]:
    row: Optional[Row] = db.execute("SELECT * FROM runs WHERE run_id = ?", (run_id,)).fetchone()
    return row


def unfinished(db: Connection, worker: str) -> List[Row]:
    """The runs of ``worker`` that never ended (a shared record holds other workers' too)."""
    return db.execute("SELECT * FROM runs WHERE finished IS NULL AND worker = ? ORDER BY started", (worker,)).fetchall()


def by_dedupe_key(db: Connection, agent: str, key: str, since: float) -> Optional[str]:
    row = db.execute(
        "SELECT run_id FROM runs WHERE agent = ? AND dedupe_key = ? AND started >= ? ORDER BY started LIMIT 1",
        (agent, key, since),
    ).fetchone()
    return row["run_id"] if row else None


def _filters(db: Connection, query: GetRunsInput) -> Tuple[str, List[Any]]:
    where, params = ["1 = 1"], []
    for column in EQUAL_FILTERS:  # the model's names, each a column of the runs table
        value = getattr(query, column)
        if value is not None:
            where.append(f"{column} = ?")
            params.append(value)
    if query.since is not None:
        where.append("started >= ?")
        params.append(epoch(query.since))
    if query.until is not None:
        where.append("started <= ?")
        params.append(epoch(query.until))
    if query.decided_by is not None:
        where.append("run_id IN (SELECT run_id FROM approvals WHERE decided_by = ?)")
        params.append(query.decided_by)
    if query.text is not None:
        text = query.text
        pattern = "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        # lower(): SQLite's LIKE ignores case, PostgreSQL's does not; PostgreSQL's trigram indexes are on lower()
        # of each (migration 0007)
        holds = "(lower(instructions) LIKE lower(?) ESCAPE '\\' OR lower(response) LIKE lower(?) ESCAPE '\\')"
        grams = _lookup(db, " AND ".join(where), params, text) if isinstance(db, sqlite3.Connection) else None
        if grams:  # the runs SQLite's trigram index names (each holds these trigrams), then the exact test on them
            where.append("rowid IN (SELECT rowid FROM runs_text WHERE runs_text MATCH ?)")
            params.append(" AND ".join('"' + gram.replace('"', '""') + '"' for gram in grams))
        where.append(holds)
        params += [pattern, pattern]
    return " AND ".join(where), params


def trigrams(text: str) -> List[str]:
    """The distinct trigrams of ``text`` (in any case), as it spells them."""
    found: Dict[str, str] = {}
    for start in range(len(text) - TRIGRAM + 1):
        found.setdefault(text[start : start + TRIGRAM].lower(), text[start : start + TRIGRAM])
    return list(found.values())


def text_indexed(db: Connection) -> bool:
    """Whether the SQLite record has its text index (an SQLite without FTS5's trigram tokenizer has none)."""
    return db.execute("SELECT 1 FROM sqlite_master WHERE name = 'runs_text'").fetchone() is not None


def _lookup(db: Connection, where: str, params: List[Any], text: str) -> Optional[List[str]]:
    """The trigrams of ``text`` SQLite looks up in its index (the rarest few in the newest of the runs the other
    filters leave), or None: it reads those runs instead. The index names the runs holding all the trigrams
    looked up, each read at some cost; reading the runs the other filters leave costs one each: a text shorter
    than a trigram, a common one, or other filters that leave fewer runs than the index would name, read the
    runs."""
    grams = trigrams(text)[:TEXT_TRIGRAMS]
    if not grams or not text_indexed(db):
        return None  # no index: an SQLite without FTS5's trigram tokenizer (schema.py)
    newest = db.execute(  # their first characters: what the text is weighed on
        f"SELECT substr(instructions, 1, 1000), substr(response, 1, 1000) FROM runs WHERE {where} "
        "ORDER BY started DESC LIMIT ?",
        [*params, TEXT_SAMPLE],
    ).fetchall()
    if len(newest) < TEXT_SAMPLE:  # the other filters leave fewer runs: read them
        return None
    texts = [f"{found[0]}\0{found[1]}".lower() for found in newest]
    holding = {gram: sum(gram.lower() in found for found in texts) for gram in grams}
    grams.sort(key=holding.__getitem__)
    runs = db.execute("SELECT coalesce(max(rowid), 0) FROM runs").fetchone()[0]  # about how many (rowids grow)
    named = int(INDEX_COST * runs * (holding[grams[0]] + 1) / len(newest))  # what reading those would cost
    if where == "1 = 1":
        return grams[:LOOKED_UP] if named < runs else None
    left = f"SELECT count(*) FROM (SELECT 1 FROM runs WHERE {where} LIMIT ?)"  # at most ``named`` of them
    return grams[:LOOKED_UP] if db.execute(left, [*params, named]).fetchone()[0] >= named else None


def find(db: Connection, query: GetRunsInput) -> RunsPage:
    """A page of run summaries, newest first, and how many match."""
    where, params = _filters(db, query)
    limit, offset = query.limit, query.offset
    total = db.execute(f"SELECT count(*) FROM runs WHERE {where}", params).fetchone()[0]
    rows = db.execute(
        f"SELECT * FROM runs WHERE {where} ORDER BY started DESC LIMIT ? OFFSET ?", (*params, limit, offset)
    ).fetchall()
    deciders: Dict[str, List[str]] = {}
    if rows:
        marks = ", ".join("?" * len(rows))
        for found in db.execute(
            f"SELECT run_id, decided_by FROM approvals WHERE decided_by IS NOT NULL AND run_id IN ({marks}) "
            "ORDER BY requested",
            [row["run_id"] for row in rows],
        ):
            deciders.setdefault(found["run_id"], []).append(found["decided_by"])
    runs = [summary(row, deciders.get(row["run_id"], [])) for row in rows]
    more = offset + len(runs) < total
    return RunsPage(runs=runs, total=total, next_offset=offset + len(runs) if more else None)


def summary(row: Row, decided_by: List[str]) -> RunSummary:
    finished = row["finished"]
    return RunSummary(
        run_id=row["run_id"],
        agent=row["agent"],
        worker=row["worker"],
        state=row["state"],
        stop_reason=row["stop_reason"],
        started=iso(row["started"]),
        finished=iso(finished),
        duration=round(finished - row["started"], 3) if finished else None,
        session_id=row["session_id"],
        schedule_id=row["schedule_id"],
        job_uuid=row["job_uuid"],
        client=row["client"],
        parent_run_id=row["parent_run_id"],
        instructions=row["instructions"][:PREVIEW_CHARS],
        response=row["response"][:PREVIEW_CHARS],
        tool_calls=row["tool_calls"],
        decided_by=decided_by,
        case_id=row["case_id"],
        provenance=provenance_of(row),
        usage=RunUsage(
            api_calls=row["api_calls"],
            input_tokens=row["input_tokens"],
            output_tokens=row["output_tokens"],
            total_tokens=row["total_tokens"],
            cost_usd=row["cost_usd"],
        ),
    )


def prune_edge(db: Connection, cutoff: float, keep: int) -> float:
    """Runs started before this go: those before ``cutoff`` and those beyond the newest ``keep`` (looked for
    only when there may be more: SQLite's rowids bound how many it holds)."""
    if isinstance(db, sqlite3.Connection):
        if db.execute("SELECT coalesce(max(rowid) - min(rowid) + 1, 0) FROM runs").fetchone()[0] <= keep:
            return cutoff
    edge = db.execute("SELECT started FROM runs ORDER BY started DESC LIMIT 1 OFFSET ?", (keep,)).fetchone()
    return float(max(cutoff, edge["started"] + 1e-6) if edge else cutoff)


def prune(db: Connection, through: float, batch: int) -> Tuple[int, int]:
    """Delete at most ``batch`` of the oldest finished runs started before ``through`` (``prune_edge``), with
    their details and approvals; how many runs and approvals (a caller loops, one short transaction each, so
    runs being recorded meanwhile wait for one batch at most)."""
    gone = [
        found["run_id"]
        for found in db.execute(
            "SELECT run_id FROM runs WHERE finished IS NOT NULL AND started < ? ORDER BY started LIMIT ?",
            (through, batch),
        )
    ]
    if not gone:
        return 0, 0
    marks = ", ".join("?" * len(gone))
    db.execute(f"DELETE FROM runs WHERE run_id IN ({marks})", gone)
    db.execute(f"DELETE FROM run_details WHERE run_id IN ({marks})", gone)
    asked = db.execute(f"DELETE FROM approvals WHERE run_id IN ({marks})", gone).rowcount
    return len(gone), asked
