"""The shell's tables and times, rendered as a terminal of a given width shows them (no NorFab)."""

from datetime import datetime, timedelta, timezone

import pytest
from rich.console import Console

from norfab_hermes.nfcli.live import reply_view
from norfab_hermes.nfcli.runs import expires
from norfab_hermes.nfcli.tables import CLIP, WRAP, short_time, short_times, table

WORKERS = ["hermes-worker-1", "hermes-worker-2"]
COLUMNS = ["worker", "agent", "state", "owner", "model", "description", "errors"]
ROWS = [
    [
        WORKERS[0],
        "interfaces",
        "running",
        "inventory",
        "scripted-model",
        "Finds faulty interfaces from device output, proposes a fix and verifies it",
        "",
    ],
    [
        WORKERS[1],
        "routing-and-adjacencies",
        "stopped",
        "runtime",
        "gpt-4.1",
        "Explains routing",
        "agent 'routing' tool 'route_to': could not list the tasks of service 'nornir': no worker of that service answered",
    ],
]


def render(renderable, width: int) -> str:
    console = Console(width=width, record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


@pytest.mark.parametrize("width", [60, 80, 120, 200])
def test_names_stay_whole_and_lines_fit_the_width(width):
    out = render(
        table(
            "agents",
            COLUMNS,
            ROWS,
            drop=["owner", "state", "model", "description"],
            text={"description": CLIP, "errors": WRAP},
        ),
        width,
    )
    assert max(len(line) for line in out.splitlines()) <= width, out
    for name in [*WORKERS, "interfaces", "routing-and-adjacencies"]:
        assert f" {name} " in out, out  # on one line, never folded


def test_columns_are_dropped_in_the_given_order_only_as_needed():
    drop = ["owner", "state", "model", "description"]
    wide = render(table("agents", COLUMNS, ROWS, drop=drop, text={"description": CLIP, "errors": WRAP}), 200)
    assert all(column in wide for column in COLUMNS)
    narrow = render(table("agents", COLUMNS, ROWS, drop=drop, text={"description": CLIP, "errors": WRAP}), 80)
    assert "owner" not in narrow
    assert "state" not in narrow
    assert "model" not in narrow
    assert "description" in narrow
    assert all(word in narrow for word in ROWS[1][-1].split())  # wrapped free text is all there


def test_clipped_text_takes_one_line():
    out = render(
        table("agents", ["agent", "description"], [["interfaces", "word " * 40]], text={"description": CLIP}), 80
    )
    assert len([line for line in out.splitlines() if "interfaces" in line or "word" in line]) == 1
    assert "…" in out


def test_an_empty_table_says_so():
    assert render(table("schedules", ["id"], []), 80).strip() == "schedules: none"


def test_times_are_local_and_short():
    now = datetime(2026, 12, 1, 15, 0, tzinfo=timezone.utc)
    today = now.replace(hour=14, minute=59, second=3, microsecond=38000)
    assert short_time(today.isoformat(), now) == today.astimezone().strftime("%H:%M:%S")
    later = now + timedelta(days=23)
    assert short_time(later.isoformat(), now) == later.astimezone().strftime("%b %d %H:%M")
    assert short_time("2031-01-01T00:00:00+00:00", now).startswith(("2030", "2031"))
    assert short_time(None) == ""
    assert short_time("soon") == "soon"


def test_an_approval_says_how_long_it_still_waits():
    soon = (datetime.now(timezone.utc) + timedelta(seconds=250)).isoformat()
    assert expires(soon) in ("in 4m 10s", "in 4m 9s")
    assert expires((datetime.now(timezone.utc) - timedelta(seconds=1)).isoformat()) == "expired"


RESULT = {
    "result": {
        "response": "r1 Gi0/2 is down",
        "run_id": "736b7986e63f",
        "session_id": "20261130_110544_1276bf6c",
        "agent": "bgp",
        "worker": "hermes-lab-2",
        "stop_reason": "completed",
    }
}


def test_a_streamed_reply_is_not_shown_again():
    assert render(reply_view(RESULT), 120).count("r1 Gi0/2 is down") == 1
    after_stream = render(reply_view(RESULT, streamed="r1 Gi0/2 is down\n"), 120)
    assert "r1 Gi0/2 is down" not in after_stream
    assert "completed | run 736b7986e63f" in after_stream
    # a stream that did not carry the whole reply: the reply is shown
    assert render(reply_view(RESULT, streamed="r1 Gi0/2"), 120).count("r1 Gi0/2 is down") == 1


def test_times_in_a_message_are_shown_short():
    now = datetime.now(timezone.utc).replace(microsecond=671000)
    text = f"schedule 'r2-watch' created, next run {now.isoformat(timespec='milliseconds')}"
    assert short_times(text) == f"schedule 'r2-watch' created, next run {now.astimezone().strftime('%H:%M:%S')}"
