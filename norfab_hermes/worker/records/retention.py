"""
Old records going by the retention (the inventory's ``records`` settings):
runs with their approvals past ``keep_days`` or beyond ``keep_runs``, audit
entries past ``keep_days`` or beyond ``keep_audit``, usage days, claimed
occurrences and the outbox's old marks; checked at most hourly as runs end,
and at the worker's start.

What goes is fixed once, then deleted in short transactions beside the runs
being recorded: each sized to take about PRUNE_HOLD, with the write lock let
go between them, so a run being recorded waits for one at most. The prune
is noted in the audit log (``records.pruned``) and the file compacted.
"""

import logging
import threading
import time
from datetime import datetime, timedelta, timezone
from typing import Any, Callable, Optional

from ...errors import RecordsUnavailable
from ...models import RecordsSettings
from . import approvals, audit, occurrences, runs, usage
from .statements import Backend

log = logging.getLogger(__name__)

PRUNE_INTERVAL = 3600.0  # seconds between retention checks while the worker runs
PRUNE_BATCH = 500  # runs or audit entries deleted per transaction at most: a run being recorded waits for one
PRUNE_HOLD = 0.04  # seconds a prune's transaction aims to take: the next one is sized by the last one's time
PRUNE_PAUSE = 0.005  # seconds between those transactions


class Retention:
    """
    The retention of one worker's records.

    Args:
        worker: the worker's name (its log lines).
        settings: what is kept.
        db: the records' backend.
        in_order: runs a body in one write transaction, in the worker's write order, after what its outbox kept.
        append: adds an audit entry in the caller's transaction.
        between: called between the prune's transactions (the SQLite text index merged as it goes).
    """

    def __init__(
        self,
        worker: str,
        settings: RecordsSettings,
        db: Backend[Any],
        in_order: Callable[[Callable[[Any], Any]], Any],
        append: Callable[..., None],
        between: Callable[[], None],
    ) -> None:
        self.worker = worker
        self.settings = settings
        self.db = db
        self.in_order = in_order
        self.append = append
        self.between = between
        self.pruned = 0.0  # when the last prune started
        self._lock = threading.Lock()

    def now_and_then(self) -> None:
        """A prune when the last one started more than PRUNE_INTERVAL ago; a record that does not answer is
        tried again then."""
        if time.time() - self.pruned > PRUNE_INTERVAL:
            try:
                self.prune()
            except RecordsUnavailable as error:
                log.warning(f"{self.worker} - Records not pruned: {error}")

    def prune(self) -> None:
        """Delete records past the retention: by age, then beyond the counts kept."""
        with self._lock:
            self.pruned = time.time()
            cutoff = datetime.now(timezone.utc) - timedelta(days=self.settings.keep_days)
            with self.db.reading() as db:  # what goes: fixed once (runs recorded meanwhile are newer)
                through = runs.prune_edge(db, cutoff.timestamp(), self.settings.keep_runs)
                edge = audit.prune_edge(db, cutoff.isoformat(timespec="milliseconds"), self.settings.keep_audit)
            asked = 0  # the approvals of the runs deleted, with them

            def runs_batch(db: Any, size: int) -> int:
                nonlocal asked
                deleted, approvals_deleted = runs.prune(db, through, size)
                asked += approvals_deleted
                return deleted

            def rest(db: Any) -> None:
                usage.prune(db, cutoff.strftime("%Y-%m-%d"))
                occurrences.prune(db, cutoff.timestamp())
                if self.db.shared:  # the fleet's outboxes' marks of writes moved long ago; each one's last stays
                    db.execute(
                        "DELETE FROM buffered_writes WHERE applied < ? AND seq < "
                        "(SELECT max(seq) FROM buffered_writes newest WHERE newest.outbox = buffered_writes.outbox)",
                        [cutoff.timestamp()],
                    )
                if gone or gone_entries:
                    pruned = {"runs": gone, "approvals": asked, "audit_entries": gone_entries}
                    self.append(db, "records.pruned", data={**pruned, "keep_days": self.settings.keep_days})

            with self.db.deleting():
                gone = self._in_batches(runs_batch)
                gone_entries = self._in_batches(lambda db, size: audit.prune(db, edge, size))
                after: Optional[str] = ""  # and any approval of a run no longer kept
                while after is not None:
                    deleted, after = self.in_order(lambda db: approvals.prune(db, after or "", PRUNE_BATCH))
                    asked += deleted
                    self._pause()
                self.in_order(rest)
                if gone or gone_entries:
                    self.db.compact()
            if gone or gone_entries:
                log.info(f"{self.worker} - Pruned {gone} run records and {gone_entries} audit entries past retention")

    def _in_batches(self, delete: Callable[[Any, int], int]) -> int:
        """``delete`` (at most the rows it is given) in one transaction after another until it deletes fewer; how
        many. Each batch is sized to take about PRUNE_HOLD by the time the last one took (the text index's
        merges and a busy disk make rows dearer), at most PRUNE_BATCH. Between them the write order and the
        write lock are let go, and a pause lets the runs being recorded meanwhile take them (neither is fair):
        a run waits for one batch at most, on either backend."""
        deleted, size, took = 0, PRUNE_BATCH, 0.0

        def timed(db: Any) -> int:
            nonlocal took
            started = time.perf_counter()
            try:
                return delete(db, size)
            finally:
                took = time.perf_counter() - started

        while True:
            batch: int = self.in_order(timed)
            deleted += batch
            if batch < size:
                return deleted
            size = max(1, min(PRUNE_BATCH, int(size * PRUNE_HOLD / max(took, 1e-3))))
            self._pause()

    def _pause(self) -> None:
        """Between two transactions of a prune: the WAL checkpointed beside the writers (``Database.deleting``),
        ``between``, then a pause for them to take the lock."""
        self.db.checkpoint()
        self.between()
        time.sleep(PRUNE_PAUSE)
