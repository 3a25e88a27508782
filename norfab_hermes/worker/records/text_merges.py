"""
The runs' text index (SQLite's ``runs_text``, FTS5) merged by a thread of its own, not by the runs' writes.

FTS5 merges an index's segments as it is written (automerge), a work unit at a time, and each unit lands
on whichever write crosses it: at a million runs a run's start or end held the record's write lock for up
to 300 ms while it merged, and every other write waited. The index is kept with automerge off
(``migrations/sqlite/0007_runs_text.sql``) and merged here instead, MERGE_DELAY after a write (with the
writes meanwhile): in steps of MERGE_PAGES pages, each its own short transaction followed by a pause
as long, until a step finds nothing to merge (no level holds FTS5's ``usermerge`` segments: the shape
automerge keeps). A write waits for one step at most. Were the thread to fall behind, FTS5's crisis merge
(16 segments on a level) still bounds the index.
"""

import logging
import sqlite3
import threading
import time

from .db import Database

log = logging.getLogger(__name__)

MERGE_PAGES = 32  # FTS5 pages (4 KiB) merged per step: a write waits for one step, tens of milliseconds
MERGE_DELAY = 0.2  # seconds from a write to the merge: the writes meanwhile are merged with it


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
            try:
                while True:
                    started = time.perf_counter()
                    if not self.step():
                        break
                    # a pause as long as the step: the thread holds the write lock half the time at most
                    if self._closing.wait(time.perf_counter() - started):
                        return
            except sqlite3.Error as error:  # a full disk, a file locked by an operator's sqlite3: the next write tries
                log.warning(f"{self.worker} - Text index of the runs not merged: {error}")

    def close(self) -> None:
        """Stop merging (a step under way ends first)."""
        self._closing.set()
        self._wanted.set()
        self._thread.join()
