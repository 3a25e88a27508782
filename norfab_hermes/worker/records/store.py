"""
The worker's records: its runs, their approvals, the agents' daily usage and
the audit log, kept across restarts for ``get_run``, ``get_runs``,
``get_audit`` and ``verify_audit``. One interface, two backends (the
inventory's ``records.backend``): ``<instance root>/norfab_records.db``
(SQLite, the worker's own) or one PostgreSQL database the fleet shares
(``pg``), where every worker's runs, usage, dedupe keys and one audit chain
meet.

Every change of a run or an approval is written with its audit entry in one
transaction. With the fleet's record each write is kept on the worker's disk
first (``outbox``), moved into the record at once by a thread of the worker:
a run pays for a local write, not for a round trip and a WAL flush of the
server; a write that must be in the record before its caller goes on (a run
that needs the record, a dedupe key, the day's usage, a change's decision) is
moved by its caller, and a read of the record comes after this worker's
writes. At start, runs and approvals a crash left open are closed as ended
by the restart (``restart``). Old records go by age and count (``retention``).
"""

import contextlib
import logging
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple, TypeVar, cast

from ...errors import InventoryError, RecordsUnavailable
from ...identity.gate import SIGNED
from ...models import (
    ApprovalInfo,
    AuditPage,
    AuditVerifyData,
    GetRunsInput,
    OutcomeUnknown,
    RecordsSettings,
    RunsPage,
    RunStateData,
    ToolCallSummary,
    now_iso,
)
from . import approvals, audit, nonces, occurrences, restart, runs, usage, writes
from .db import RECORDS_FILE, Database
from .outbox import Kept, Outbox
from .retention import Retention
from .runs import RunRow, iso
from .schema import SqliteSchema
from .statements import Backend
from .text_merges import PRUNE_MERGES, TextMerges

if TYPE_CHECKING:
    from .pg import PgDatabase  # the postgresql extra: a SQLite worker never imports the driver

log = logging.getLogger(__name__)
T = TypeVar("T")

NONCE_PRUNE_INTERVAL = 60.0  # seconds between deletions of expired proofs' nonces


def quietly(worker: str, what: str, write: Callable[..., Any], *args: Any) -> None:
    """``write(*args)`` for a caller the records must never fail (a run going on, a decision taken):
    a failure is logged and the caller goes on."""
    try:
        write(*args)
    except Exception:
        log.exception(f"{worker} - Could not write {what} to the records")


def open_database(root: Path, worker: str, settings: RecordsSettings) -> Backend[Any]:
    """The backend the settings name: the worker's SQLite file, or the fleet's PostgreSQL."""
    if settings.backend == "sqlite":
        tables = SqliteSchema()  # the fleet's migrations, in SQLite's words: one definition of the tables
        return Database(Path(root) / RECORDS_FILE, [tables.tables_script()], [tables.upgrade])
    dsn = os.environ.get(settings.dsn_env or "")
    if not dsn:
        raise InventoryError(
            f"records.dsn_env: environment variable {settings.dsn_env} is not set on worker '{worker}'; set it to "
            "the PostgreSQL connection string, e.g. 'host=db.example.net dbname=hermes user=hermes_worker'"
        )
    from .pg import PgDatabase  # the postgresql extra: a SQLite worker never imports the driver

    return PgDatabase(dsn, f"${settings.dsn_env}")


class Records:
    """
    One worker's durable records.

    Args:
        root: the instance root (the database lives there).
        worker: the worker's name, in every record.
        settings: retention.
    """

    def __init__(self, root: Path, worker: str, settings: RecordsSettings) -> None:
        self.worker = worker
        self.settings = settings
        self.db = open_database(root, worker, settings)
        self._cases: Dict[str, Optional[str]] = {}  # run id -> case id, of this worker's runs in flight
        self._nonces_pruned = 0.0
        self._order = threading.RLock()  # the worker's writes, in the order they reach the record or the outbox
        self.outbox = Outbox(root, worker, self.fleet, self._move, self._order) if self.fleet is not None else None
        self.retention = Retention(worker, settings, self.db, self._in_order, self._append, self._merge_text)
        self.text: Optional[TextMerges] = None  # the text index's merges: SQLite's, off the writes' path
        if isinstance(self.db, Database):
            with self.db.reading() as db:
                if runs.text_indexed(db):
                    self.text = TextMerges(worker, self.db)

    @property
    def path(self) -> Any:
        return self.db.path

    @property
    def shared(self) -> bool:
        """The fleet's record: other workers' runs and audit entries are in it too."""
        return self.db.shared

    @property
    def fleet(self) -> Optional["PgDatabase"]:
        """The fleet's record (its advisory locks; what the outbox moves into), or None: the worker's own."""
        return cast("PgDatabase", self.db) if self.db.shared else None  # the one shared backend

    # ---------------------------------------------------------------- runs
    # Each write is named and its arguments are JSON (``_record``, ``writes``): with the fleet's record kept in
    # the outbox first, and written from there the same way (``_move``).

    def run_started(self, row: RunRow, needs_record: Optional[str] = None) -> None:
        """A run was accepted. ``needs_record``: why it cannot go on without the record (it may change a
        device, its device locks are there): refused (RecordsUnavailable) rather than kept in the outbox."""
        self._cases[row.run_id] = row.case_id
        # a dedupe key is in the record before the worker admits the next request of it (its lock is released)
        self._record("run_started", {"row": row}, needs_record, now=bool(row.dedupe_key))

    def run_running(self, run_id: str, session_id: Optional[str]) -> None:
        self._record("run_running", {"run_id": run_id, "session_id": session_id})

    def tool_call(self, agent: str, run_id: str, calls: List[ToolCallSummary]) -> None:
        """The run made a tool call (the last of ``calls``)."""
        dumped = [call.model_dump(exclude_none=True) for call in calls]
        self._record("tool_call", {"agent": agent, "run_id": run_id, "calls": dumped})

    def run_ended(self, state: RunStateData, finished: float) -> None:
        self._record("run_ended", {"state": state, "finished": finished})
        self._cases.pop(state.run_id, None)
        self.retention.now_and_then()

    def approval(self, info: ApprovalInfo, kind: str, actor: Optional[str] = None) -> None:
        """An approval was requested, decided or expired (``kind``); the run waits or goes on."""
        payload = {"info": info, "kind": kind, "actor": actor}
        # a change's decision (what was approved, on which devices) is in the record, on its server's disk,
        # before the change is sent; any other step is on the worker's disk first, like a run's other writes
        self._record("approval", payload, now=info.state != "pending" and bool(info.change_digest))

    def note(
        self,
        kind: str,
        agent: Optional[str] = None,
        run_id: Optional[str] = None,
        actor: Optional[str] = None,
        **data: Any,
    ) -> None:
        """An audit entry of its own: a refused decision, a lifecycle or schedule change, a skipped run.
        Never raises: what it notes has happened (or was refused) whether or not the entry is written."""
        payload = {"kind": kind, "agent": agent, "run_id": run_id, "actor": actor, "data": data}
        quietly(self.worker, f"audit entry {kind}", self._record, "note", payload)

    def add_usage(self, agent: str, day: str, tokens: int, cost: float) -> Tuple[int, float]:
        """Add to the agent's day; the day's totals after it (while the record does not answer: this add's)."""
        added = {"agent": agent, "day": day, "tokens": tokens, "cost": cost}
        return self._record("add_usage", added, now=True) or (tokens, cost)

    def _record(
        self,
        name: str,
        payload: Dict[str, Any],
        needs_record: Optional[str] = None,
        now: bool = False,
    ) -> Any:
        """Write ``name``. With the fleet's record: kept in the outbox and moved by its thread, or, ``now`` or
        for a run that ``needs_record``, moved at once with what waits before it (while the record does not
        answer, kept; a write that needs it refused). What the write answered, or None."""
        signed = SIGNED.get()  # the operator's proof, for verify_audit to check again
        payload = {**payload, "at": now_iso(), "signed": signed.audit() if signed is not None else None}
        run_id = writes.run_of(name, payload)
        if run_id in self._cases:  # a run in flight: its case goes with the write (none read when it is made)
            payload["case"] = self._cases[run_id]
        if self.outbox is None:
            return self._write(self._body(name, payload))
        if not (now or needs_record):
            self.outbox.put(name, writes.encoded(payload))
            return None
        with self._order:
            if needs_record and self.outbox.away:
                waiting = f"{self.outbox.waiting} records of this worker wait for it"
                raise self._refusal(needs_record, f"{self.outbox.away}; {waiting}")
            seq = self.outbox.put(name, writes.encoded(payload), waited=True)
            try:
                return self.outbox.catch_up(through=seq).get(seq)
            except RecordsUnavailable as error:
                if needs_record and self.outbox.take_back(seq):
                    raise self._refusal(needs_record, str(error)) from error
                return None  # kept: moved once the record answers

    def _move(self, batch: List[Kept], mark: Callable[[Any], None]) -> List[Any]:
        """Writes the outbox kept, into the record in one transaction with their mark; what each answered. Its
        commit waits for the server's flush (the outbox's thread waits, or the caller that needs the write)."""
        bodies = [self._body(kept.name, kept.payload) for kept in batch]

        def write(db: Any) -> List[Any]:
            mark(db)
            return [body(db) for body in bodies]

        return self._write(write)

    @contextlib.contextmanager
    def _reading(self) -> Iterator[Any]:
        """Reads of the record after this worker's writes (what waits in the outbox is moved first; while the
        record did not answer, a read tries it)."""
        if self.outbox is not None and self.outbox.waiting:
            with self._order:
                self.outbox.catch_up(trying=True)
        with self.db.reading() as db:
            yield db

    def _refusal(self, needs: str, cause: str) -> RecordsUnavailable:
        """A run that needs the record refused: the database's error, why the run needs it, the fix."""
        env = self.settings.dsn_env
        said, _, fixed = cause.partition(" Fix: ")
        fixed = fixed or f"start or reach the PostgreSQL server that {env} names, or correct {env}"
        return RecordsUnavailable(
            f"{said.rstrip('. ')}; {needs}, so the run is refused until it answers (read-only runs go on "
            f"meanwhile, their records kept on this worker). Fix: {fixed}"
        )

    def _body(self, name: str, p: Dict[str, Any]) -> Callable[[Any], Any]:
        return writes.body(name, p, self._append)

    def _write(self, body: Callable[[Any], T]) -> T:
        """``body`` in one write transaction; once more after the new head when another worker appended to
        the fleet's audit chain meanwhile (the second time the head is read and locked: it cannot move)."""
        try:
            with self.db.transaction() as db:
                done = body(db)
        except audit.ChainMoved:
            with self.db.transaction() as db:
                done = body(db)
        if self.text is not None:
            self.text.written()
        return done

    def _append(
        self,
        db: Any,
        kind: str,
        agent: Optional[str] = None,
        run_id: Optional[str] = None,
        actor: Optional[str] = None,
        data: Optional[Dict[str, Any]] = None,
        at: Optional[str] = None,
        signed: Optional[Dict[str, Any]] = None,
        case: Any = writes.LOOKUP,
    ) -> None:
        """An audit entry in the caller's transaction, made ``at`` (default: now); an entry of a run of a
        case names the case (``case``, else read); ``signed``: the operator's proof (default: the request's)."""
        if case is writes.LOOKUP:
            case = self._cases[run_id] if run_id in self._cases else run_id and runs.case_of(db, run_id)
        case_id = case
        if case_id:
            data = {**(data or {}), "case_id": case_id}
        if signed is None and (proof := SIGNED.get()) is not None:
            signed = proof.audit()
        if signed is not None:
            data = {**(data or {}), "signed": signed}
        before = self.db.chain_head(db)  # one chain for the fleet: its workers append in turn
        row = audit.entry(before, self.worker, kind, agent, run_id, actor, data, at)
        self.db.move_head(db, before, (row[0], row[-1]))  # first: the head's row is the chain's lock
        audit.insert(db, row)

    # --------------------------------------------------------------- usage

    def spent(self, agent: str, day: str) -> Tuple[int, float]:
        with self._reading() as db:
            return usage.spent(db, agent, day)

    def claim(self, group: str, agent: str, name: str, due: str) -> str:
        """The worker that runs this due occurrence of a grouped schedule (this one, when it claimed it first)."""
        return self._write(lambda db: occurrences.claim(db, group, agent, name, due, self.worker))

    def first_use(self, nonce: str, job: str, expires: float, now: float) -> Optional[str]:
        """Take a proof's nonce for this worker's ``job``; why it was taken already, or None (expired ones go)."""
        with self.db.transaction() as db:
            if now - self._nonces_pruned > NONCE_PRUNE_INTERVAL:
                nonces.prune(db, now)
                self._nonces_pruned = now
            return nonces.first_use(db, nonce, self.worker, job, expires)

    # --------------------------------------------------------------- reads

    def run_state(self, run_id: str, offset: int = 0) -> Optional[RunStateData]:
        """A run as get_run shows it, from its record."""
        with self._reading() as db:
            row = runs.get(db, run_id)
            if row is None:
                return None
            asked = approvals.of_run(db, run_id)
            ended = runs.detail(db, run_id)
        if ended and ended.get("result"):
            ended["result"]["approvals"] = asked
        data = ended or {
            "run_id": row["run_id"],
            "agent": row["agent"],
            "worker": row["worker"],
            "state": row["state"],
            "session_id": row["session_id"],
            "started": iso(row["started"]),
            "client": row["client"],
            "schedule_id": row["schedule_id"],
        }
        events = data.get("events") or []
        result = data.get("result")
        data.update(
            # a run in flight on another worker of a shared record, or cut by a crash: its calls so far
            tool_calls=(result or {}).get("tool_calls") or data.get("tool_calls") or runs.calls_so_far(row),
            instructions=row["instructions"],
            case_id=row["case_id"],
            provenance=runs.provenance_of(row),
            approvals=asked,
            events=events[offset:],
            next_offset=offset + len(events[offset:]),
        )
        return RunStateData.model_validate(data)

    def runs(self, query: Optional[GetRunsInput] = None) -> RunsPage:
        """A page of the run records matching ``query`` (the newest 50 without one)."""
        with self._reading() as db:
            page = runs.find(db, query or GetRunsInput())
        return page.model_copy(update={"record": self.db.record_id})

    def approval_info(self, approval_id: str) -> Optional[ApprovalInfo]:
        with self._reading() as db:
            return approvals.get(db, approval_id)

    def deduplicate(self, agent: str, key: str, since: float) -> Optional[str]:
        """The run of ``agent`` started with dedupe ``key`` since ``since``, if one was."""
        with self._reading() as db:
            return runs.by_dedupe_key(db, agent, key, since)

    def audit_page(self, after: int, limit: int, **filters: Any) -> AuditPage:
        with self._reading() as db:
            page = audit.page(db, after, limit, **filters)
        return page.model_copy(update={"record": self.db.record_id})

    def verify(self, keys: Optional[Dict[str, str]] = None) -> AuditVerifyData:
        """The audit chain checked; operators' signatures against ``keys`` (fingerprint to operator) when given."""
        with self._reading() as db:
            verified = audit.verify(db, self.worker, keys)
        return verified.model_copy(update={"record": self.db.record_id})

    # ----------------------------------------------------------- lifecycle

    def settle(self, unknown: Sequence[OutcomeUnknown] = ()) -> Tuple[List[str], List[str]]:
        """Close what a crash left open (``restart``): pending approvals expire, runs end; (run ids, approval
        ids). ``unknown``: the change jobs that were in flight, from the change envelope's markers."""
        return self._in_order(lambda db: restart.settle(db, self.worker, unknown, self._append))

    def prune(self) -> None:
        """Delete records past the retention (``retention``)."""
        self.retention.prune()

    def _merge_text(self) -> None:
        """Between a prune's transactions: what they left the text index to merge, merged as the prune goes."""
        if self.text is not None:
            self.text.catch_up(PRUNE_MERGES)

    def _in_order(self, body: Callable[[Any], T]) -> T:
        """``body`` in one write transaction in the worker's write order, never while the outbox keeps writes
        the record lacks (they are moved first)."""
        with self._order:
            if self.outbox is not None:
                self.outbox.catch_up()
            return self._write(body)

    def close(self) -> None:
        if self.outbox is not None:
            self.outbox.close()
        if self.text is not None:
            self.text.close()
        self.db.close()
