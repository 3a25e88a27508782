"""What a failed eval prints from the lab's logs: its warnings and errors up to the runs' end (no NorFab)."""

import json
from datetime import datetime, timezone

from norfab_hermes.eval.lab import LOGS, lab_warnings


def write(folder, name, *entries):
    (folder / LOGS).mkdir(parents=True, exist_ok=True)
    (folder / LOGS / name).write_text("\n".join(json.dumps(e) if isinstance(e, dict) else e for e in entries) + "\n")


def test_a_failed_evals_lab_tells_its_warnings_and_errors_up_to_the_runs_end_oldest_first(tmp_path):
    write(
        tmp_path,
        "broker-NFPBroker.jsonl",
        {"ts": "2026-12-03T15:00:02+00:00", "level": "INFO", "name": "NFPBroker", "message": "registered"},
        {
            "ts": "2026-12-03T15:00:09+00:00",
            "level": "INFO",
            "name": "NFPBroker",
            "message": "worker\n  keepalives expired",
        },
        {
            "ts": "2026-12-03T15:00:09.5+00:00",
            "level": "ERROR",
            "name": "NFPBroker",
            "message": "failed to\n  target workers",
        },
    )
    write(
        tmp_path,
        "worker-hermes-worker-1.jsonl",
        "not json",
        {
            "ts": "2026-12-03T15:00:05+00:00",
            "level": "WARNING",
            "name": "hermes-worker-1",
            "message": "keepalive expired",
        },
        {"ts": "2026-12-03T15:01:00+00:00", "level": "WARNING", "name": "hermes-worker-1", "message": "stopping"},
    )
    ended = datetime(2026, 12, 3, 15, 0, 30, tzinfo=timezone.utc)
    assert lab_warnings(tmp_path, ended) == [
        "2026-12-03T15:00:05+00:00 WARNING hermes-worker-1: keepalive expired",
        "2026-12-03T15:00:09.5+00:00 ERROR NFPBroker: failed to target workers",
    ]
    assert lab_warnings(tmp_path, ended, last=1) == [
        "2026-12-03T15:00:09.5+00:00 ERROR NFPBroker: failed to target workers"
    ]
    assert lab_warnings(tmp_path / "no-lab", ended) == []
