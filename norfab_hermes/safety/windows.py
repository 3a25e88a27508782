"""
Change windows: when an agent (or one of its tools) may change devices.

A window is ``DAYS HH:MM-HH:MM`` in the policy's time zone, e.g.
``sat,sun 00:00-24:00``, ``mon-fri 22:00-04:00`` (a window whose end is
before its start runs past midnight and belongs to the day it starts) or
``daily 01:00-03:00``. No window means any time.

Pure data and checks: imported by ``models`` (definitions) and by the
worker's change control.
"""

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import FrozenSet, List, Optional, Set
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
WINDOW_RE = re.compile(r"^\s*(?P<days>[a-z,\-]+)\s+(?P<start>\d{2}:\d{2})\s*-\s*(?P<end>\d{2}:\d{2})\s*$", re.I)
EXAMPLE = "e.g. 'sat,sun 00:00-24:00', 'mon-fri 22:00-04:00' or 'daily 01:00-03:00'"


@dataclass(frozen=True)
class Window:
    days: FrozenSet[int]  # 0 = Monday: the days the window starts on
    start: int  # minutes after midnight
    end: int  # minutes after midnight, 1440 at most; before start: the window runs past midnight
    text: str


def _day(name: str, text: str) -> int:
    if name not in DAYS:
        raise ValueError(f"window '{text}': '{name}' is not a day; use {', '.join(DAYS)} or daily")
    return DAYS.index(name)


def _days(spec: str, text: str) -> FrozenSet[int]:
    if spec == "daily":
        return frozenset(range(7))
    days: Set[int] = set()
    for part in spec.split(","):
        first, _, last = part.partition("-")
        start = _day(first, text)
        end = _day(last, text) if last else start
        days.update((start + i) % 7 for i in range((end - start) % 7 + 1))
    return frozenset(days)


def _minutes(clock: str, text: str, end: bool) -> int:
    hours, minutes = (int(x) for x in clock.split(":"))
    value = hours * 60 + minutes
    if minutes > 59 or value > 1440 or (value == 1440 and not end):
        raise ValueError(f"window '{text}': '{clock}' is not a time of day (00:00 to 24:00)")
    return value


def parse_window(text: str) -> Window:
    """A window from its text; ValueError says what is wrong and how to write it."""
    match = WINDOW_RE.match(text or "")
    if not match:
        raise ValueError(f"window '{text}' must be DAYS HH:MM-HH:MM, {EXAMPLE}")
    start = _minutes(match["start"], text, end=False)
    end = _minutes(match["end"], text, end=True)
    if start == end:
        raise ValueError(f"window '{text}' starts when it ends; for a whole day write 00:00-24:00")
    return Window(_days(match["days"].lower(), text), start, end, text.strip())


def time_zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"time zone '{name}' is not known; use an IANA name such as UTC or Europe/London") from None


def is_open(window: Window, at: datetime) -> bool:
    """Whether ``at`` (in the window's time zone) falls inside the window."""
    minute = at.hour * 60 + at.minute
    today, yesterday = at.weekday(), (at.weekday() - 1) % 7
    if window.start < window.end:
        return today in window.days and window.start <= minute < window.end
    return (today in window.days and minute >= window.start) or (yesterday in window.days and minute < window.end)


def next_opening(windows: List[Window], at: datetime) -> Optional[datetime]:
    """When the first of ``windows`` opens after ``at``; None without windows."""
    midnight = at.replace(hour=0, minute=0, second=0, microsecond=0)
    starts = [
        midnight + timedelta(days=offset, minutes=window.start)
        for offset in range(8)
        for window in windows
        if (at.weekday() + offset) % 7 in window.days
    ]
    later = [start for start in starts if start > at]
    return min(later) if later else None


def refusal(windows: List[Window], zone: ZoneInfo, now: datetime, whose: str) -> Optional[str]:
    """Why a change may not run at ``now`` (any time zone): outside every window, with the next one."""
    if not windows or any(is_open(window, now.astimezone(zone)) for window in windows):
        return None
    local = now.astimezone(zone)
    opening = next_opening(windows, local)
    listed = "; ".join(window.text for window in windows)
    when = f"; the next window opens {opening:%a %Y-%m-%d %H:%M} {zone.key}" if opening else ""
    return f"{whose} change windows ({listed}, {zone.key}) are closed now ({local:%a %H:%M}){when}"
