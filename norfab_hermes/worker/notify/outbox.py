"""
The notifications outbox: every message for every channel, kept on the
worker's disk (``notify_outbox.db``, WAL) from the moment it is made until
its channel took it, so a restart or a channel outage loses nothing.

A message is queued once per channel and event: ``(channel, key, kind)`` is
unique, so an approval told twice that it was requested is one card. Each
channel takes its messages oldest first, one at a time (``delivery.py``): a
channel down for a while gets them in order once it is back. A message the
channel keeps refusing is set aside as a dead letter, shown in ``get_status``.
"""

import json
import sqlite3
import time
from dataclasses import asdict
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from ..records.db import Database
from .channel import Message

OUTBOX_FILE = "notify_outbox.db"
SCHEMA = """
CREATE TABLE IF NOT EXISTS messages (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    channel TEXT NOT NULL,
    key TEXT NOT NULL,
    kind TEXT NOT NULL,
    message TEXT NOT NULL,          -- the Message, as JSON
    state TEXT NOT NULL,            -- waiting, sent or dead
    attempts INTEGER NOT NULL DEFAULT 0,
    next_try REAL NOT NULL,
    error TEXT,
    queued REAL NOT NULL,
    done REAL,
    UNIQUE (channel, key, kind)
);
CREATE INDEX IF NOT EXISTS messages_waiting ON messages (channel, state, seq);
-- what a channel that edits in place sent for a key: the card later messages of that key update
CREATE TABLE IF NOT EXISTS cards (
    channel TEXT NOT NULL,
    key TEXT NOT NULL,
    reference TEXT NOT NULL,
    PRIMARY KEY (channel, key)
);
"""
KEEP_SENT = 7 * 86400.0  # sent messages are kept a week (for status and dedupe), then deleted


class NotifyOutbox:
    """The queue of messages by channel, on disk."""

    def __init__(self, root: Path) -> None:
        self.file = Database(Path(root) / OUTBOX_FILE, [SCHEMA])

    def put(self, channels: List[str], message: Message) -> List[str]:
        """Queue ``message`` for each channel; the channels that did not have it yet."""
        payload, now, queued = json.dumps(asdict(message), default=str), time.time(), []
        with self.file.transaction() as db:
            for channel in channels:
                cursor = db.execute(
                    "INSERT OR IGNORE INTO messages (channel, key, kind, message, state, next_try, queued) "
                    "VALUES (?, ?, ?, ?, 'waiting', ?, ?)",
                    (channel, message.key, message.kind, payload, now, now),
                )
                if cursor.rowcount:
                    queued.append(channel)
        return queued

    def first(self, channel: str) -> Optional[Tuple[int, Message, int, float]]:
        """The channel's oldest waiting message: (seq, message, attempts so far, when it may be tried)."""
        with self.file.reading() as db:
            row = db.execute(
                "SELECT seq, message, attempts, next_try FROM messages WHERE channel = ? AND state = 'waiting' "
                "ORDER BY seq LIMIT 1",
                (channel,),
            ).fetchone()
        return (row[0], Message(**json.loads(row[1])), row[2], row[3]) if row else None

    def sent(self, seq: int, channel: str, key: str, reference: Optional[str]) -> None:
        with self.file.transaction() as db:
            db.execute("UPDATE messages SET state = 'sent', done = ?, error = NULL WHERE seq = ?", (time.time(), seq))
            if reference:
                db.execute(
                    "INSERT INTO cards (channel, key, reference) VALUES (?, ?, ?) "
                    "ON CONFLICT (channel, key) DO NOTHING",
                    (channel, key, reference),
                )

    def failed(self, seq: int, error: str, retry_at: Optional[float]) -> None:
        """A send that raised: tried again at ``retry_at``, or a dead letter when None."""
        with self.file.transaction() as db:
            if retry_at is None:
                db.execute(
                    "UPDATE messages SET state = 'dead', attempts = attempts + 1, error = ?, done = ? WHERE seq = ?",
                    (error, time.time(), seq),
                )
            else:
                db.execute(
                    "UPDATE messages SET attempts = attempts + 1, error = ?, next_try = ? WHERE seq = ?",
                    (error, retry_at, seq),
                )

    def card(self, channel: str, key: str) -> Optional[str]:
        with self.file.reading() as db:
            row = db.execute("SELECT reference FROM cards WHERE channel = ? AND key = ?", (channel, key)).fetchone()
        return row[0] if row else None

    def counts(self, channel: str) -> Dict[str, int]:
        """Messages of the channel by state: waiting, sent, dead."""
        with self.file.reading() as db:
            rows = db.execute("SELECT state, count(*) FROM messages WHERE channel = ? GROUP BY state", (channel,))
            found = {state: count for state, count in rows}
        return {state: found.get(state, 0) for state in ("waiting", "sent", "dead")}

    def dead(self, channel: str, limit: int = 10) -> List[sqlite3.Row]:
        """The channel's newest dead letters."""
        with self.file.reading() as db:
            return db.execute(
                "SELECT seq, key, kind, attempts, error, done FROM messages WHERE channel = ? AND state = 'dead' "
                "ORDER BY seq DESC LIMIT ?",
                (channel, limit),
            ).fetchall()

    def state(self, channel: str, key: str, kind: str) -> Optional[str]:
        with self.file.reading() as db:
            row = db.execute(
                "SELECT state FROM messages WHERE channel = ? AND key = ? AND kind = ?", (channel, key, kind)
            ).fetchone()
        return row[0] if row else None

    def prune(self) -> None:
        with self.file.transaction() as db:
            db.execute("DELETE FROM messages WHERE state = 'sent' AND done < ?", (time.time() - KEEP_SENT,))

    def close(self) -> None:
        self.file.close()
