"""
The runs' text index (SQLite's ``runs_text``, FTS5) merged by a thread of its own, not by the runs' writes.

FTS5 merges an index's segments as it is written (automerge), a work unit at a time, and each unit lands
on whichever write crosses it: at a million runs a run's start or end held the record's write lock for up
to 300 ms while it merged, and every other write waited. The index is kept with automerge off
(``migrations/sqlite/0007_runs_text.sql``) and merged here instead, MERGE_DELAY after a write (with the
writes meanwhile): in steps of MERGE_PAGES pages, each its own short transaction followed by a pause
as long, until a step finds nothing to merge (no level holds FTS5's ``usermerge`` segments: the shape
automerge keeps). A write waits for one step at most, and a prune makes steps of its own as it goes
(``catch_up``). Were both to fall behind, a write's crisis merge (200 segments on a level) bounds the index.
"""

import logging
import sqlite3
import threading
import time
from typing import Optional

from .db import Database

log = logging.getLogger(__name__)

MERGE_PAGES = 32  # FTS5 pages (4 KiB) merged per step: a write waits for one step, tens of milliseconds
MERGE_DELAY = 0.2  # seconds from a write to the merge: the writes meanwhile are merged with it
PRUNE_MERGES = 1  # steps a prune makes between two of its transactions (``catch_up``)


class TextMerges:
    """
    The merges of one SQLite record's text index.

    Args:
        worker: the worker's name (its log lines, the thread's name).
        db: the record (its ``runs_text`` made). What the index holds already is merged at once: an older
            worker's file, indexed at this open, or merged as it was written.
    """

    def __init__(self, worker: str, db: Database) -> None:
        self.worker = worker
        self.db = db
        self._wanted = threading.Event()
        self._wanted.set()
        self._closing = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"{worker}-text-merges", daemon=True)
        self._thread.start()

    def written(self) -> None:
        """The record was written: what the index now has to merge is merged."""
        self._wanted.set()

    def step(self) -> bool:
        """One step of merging; whether it merged anything (FTS5 counts fewer than two changes when not)."""
        with self.db.transaction() as db:
            before = db.total_changes
            db.execute("INSERT INTO runs_text (runs_text, rank) VALUES ('merge', ?)", (MERGE_PAGES,))
            return db.total_changes - before >= 2

    def _run(self) -> None:
        while True:
            self._wanted.wait()
            if self._closing.wait(MERGE_DELAY):
                return
            self._wanted.clear()
            self.catch_up()

    def catch_up(self, most: Optional[int] = None) -> None:
        """Steps until one finds nothing to merge (or ``most`` were made), each followed by a pause as long:
        the write lock is held half the time at most. The thread's, and a prune's between its transactions:
        its deletions write the index's largest segments, and left to the thread, which merges the level
        holding the most segments (the runs' small ones), they piled up until a run's write met them in a
        crisis merge. A failing step (a full disk, a file locked by an operator's sqlite3) is logged: the
        next write tries again."""
        made = 0
        try:
            while most is None or made < most:
                started = time.perf_counter()
                if not self.step():
                    return
                made += 1
                if self._closing.wait(time.perf_counter() - started):
                    return
        except sqlite3.Error as error:
            log.warning(f"{self.worker} - Text index of the runs not merged: {error}")

    def close(self) -> None:
        """Stop merging (a step under way ends first)."""
        self._closing.set()
        self._wanted.set()
        self._thread.join()
