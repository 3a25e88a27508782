"""
Tables and times of the ``nf# hermes`` commands, readable in an 80-column
terminal.

Names and ids (workers, agents, runs, sessions, schedules) are never broken:
operators copy them into the next command. When a table does not fit the
terminal, it drops the columns its view names as least useful, one at a
time, until it does; free text (descriptions, errors, findings) wraps
(``WRAP``) or is cut to one line (``CLIP``). The width is the one the table
is printed at, so the same result fits an 80 and a 200 column terminal.
Times are local: a clock time today, the date otherwise.
"""

import re
from datetime import datetime, timezone
from typing import Any, Dict, Iterable, List, Optional, Sequence

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.table import Table
from rich.text import Text

WRAP = "wrap"  # free text shown whole, over several lines
CLIP = "clip"  # free text cut to one line with an ellipsis
TEXT_MIN = 12  # the narrowest a free-text column gets before columns are dropped
BORDERS = 3  # cells a column adds around its text: padding on each side and a rule
ISO_TIME = re.compile(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d(?::\d\d(?:\.\d+)?)?(?:Z|[+-]\d\d:\d\d)?")


class FitTable:
    """
    A table that drops columns to fit the width it is printed at.

    Args:
        title: shown above the table.
        columns: column headers, in order.
        rows: one list of cells per row; a cell is a ``Text`` or anything ``str()`` shows.
        drop: headers in the order they are dropped when the table is too wide.
        text: headers of free-text columns, each ``WRAP`` or ``CLIP``; the others are names.
    """

    def __init__(
        self,
        title: str,
        columns: Sequence[str],
        rows: Iterable[Sequence[Any]],
        drop: Sequence[str] = (),
        text: Optional[Dict[str, str]] = None,
    ) -> None:
        self.title = title
        self.columns = list(columns)
        self.rows = [
            [cell if isinstance(cell, Text) else Text("" if cell is None else str(cell)) for cell in row]
            for row in rows
        ]
        self.drop = list(drop)
        self.text = text or {}

    def shown(self, width: int) -> List[int]:
        """Indexes of the columns that fit ``width``, after dropping as few as needed."""
        shown = list(range(len(self.columns)))
        for name in self.drop:
            if self.narrowest(shown) <= width:
                break
            shown.remove(self.columns.index(name))
        return shown

    def narrowest(self, shown: List[int]) -> int:
        """The table's width with every name whole and free text at TEXT_MIN."""
        total = 1
        for index in shown:
            widest = max([cell_len(self.columns[index])] + [row[index].cell_len for row in self.rows])
            total += BORDERS + (min(widest, TEXT_MIN) if self.columns[index] in self.text else widest)
        return total

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        view = Table(title=self.title, title_justify="left")
        shown = self.shown(options.max_width)
        for index in shown:
            name = self.columns[index]
            kind = self.text.get(name)
            if kind is None:
                view.add_column(name, no_wrap=True)
            else:
                view.add_column(name, overflow="fold" if kind == WRAP else "ellipsis")
        for row in self.rows:
            cells = []
            for index in shown:
                cell = row[index]
                if self.text.get(self.columns[index]) == CLIP:
                    cell = cell.copy()
                    cell.no_wrap, cell.overflow = True, "ellipsis"
                cells.append(cell)
            view.add_row(*cells)
        yield view


def table(
    title: str,
    columns: Sequence[str],
    rows: List[List[Any]],
    drop: Sequence[str] = (),
    text: Optional[Dict[str, str]] = None,
) -> Any:
    """A :class:`FitTable`, or one line saying there is nothing to show."""
    if not rows:
        return Text(f"{title}: none")
    return FitTable(title, columns, rows, drop, text)


def parse_time(iso: Optional[str]) -> Optional[datetime]:
    """An ISO time as an aware datetime (UTC when it names no zone); None if it does not parse."""
    try:
        moment = datetime.fromisoformat(str(iso))
    except (TypeError, ValueError):
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def short_time(iso: Optional[str], now: Optional[datetime] = None) -> str:
    """An ISO time in local time: HH:MM:SS today, 'Dec 24 09:00' this year, the date otherwise."""
    moment = parse_time(iso)
    if moment is None:
        return str(iso or "")
    local = moment.astimezone()
    today = (now or datetime.now(timezone.utc)).astimezone()
    if local.date() == today.date():
        return local.strftime("%H:%M:%S")
    return local.strftime("%b %d %H:%M" if local.year == today.year else "%Y-%m-%d")


def short_times(text: str) -> str:
    """``text`` with every ISO time in it shown as :func:`short_time` shows it (the worker's messages quote them)."""
    return ISO_TIME.sub(lambda match: short_time(match.group(0)), text)


def clock(iso: Optional[str]) -> str:
    """An ISO time as local HH:MM:SS.mmm (as NorFab prints job events); as given if it does not parse."""
    moment = parse_time(iso)
    return str(iso or "") if moment is None else moment.astimezone().strftime("%H:%M:%S.%f")[:-3]
