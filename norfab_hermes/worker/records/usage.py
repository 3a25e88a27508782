"""
The daily usage ledger: tokens and cost each agent's runs spent per day
(UTC), added as every model answer reports them, so that a daily budget
holds across runs, schedules and restarts.
"""

from datetime import datetime, timezone
from typing import Tuple

from .statements import Connection


def today() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%d")


def spent(db: Connection, agent: str, day: str) -> Tuple[int, float]:
    row = db.execute("SELECT tokens, cost_usd FROM usage WHERE agent = ? AND day = ?", (agent, day)).fetchone()
    return (row["tokens"], row["cost_usd"]) if row else (0, 0.0)


def add(db: Connection, agent: str, day: str, tokens: int, cost: float) -> Tuple[int, float]:
    """Add to the day's usage; the day's totals after it."""
    row = db.execute(
        "INSERT INTO usage (agent, day, tokens, cost_usd) VALUES (?, ?, ?, ?) ON CONFLICT (agent, day) DO UPDATE "
        "SET tokens = usage.tokens + excluded.tokens, cost_usd = usage.cost_usd + excluded.cost_usd "
        "RETURNING tokens, cost_usd",
        (agent, day, tokens, cost),
    ).fetchall()[0]  # all of it: a RETURNING statement left open would block the commit
    return row["tokens"], row["cost_usd"]


def prune(db: Connection, first_day: str) -> int:
    return db.execute("DELETE FROM usage WHERE day < ?", (first_day,)).rowcount
