"""
Run every benchmark in one process and write benchmarks/results/results.md
and results.json. Speed and memory are reported as ratios and absolute
numbers from one run on this machine; nothing here is a pass/fail test.

usage: python benchmarks/run.py [name ...]   (names: hosting, tools, concurrency, schedules, fleet, records, identity, notify, web)
"""

import json
import os
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import bench_concurrency  # noqa: E402
import bench_fleet  # noqa: E402
import bench_hosting  # noqa: E402
import bench_identity  # noqa: E402
import bench_notify  # noqa: E402
import bench_records  # noqa: E402
import bench_schedules  # noqa: E402
import bench_tools  # noqa: E402
import bench_web  # noqa: E402

from norfab_hermes.testing.scripted_model import ScriptedModelServer  # noqa: E402

BENCHMARKS = {
    "hosting": bench_hosting,
    "tools": bench_tools,
    "concurrency": bench_concurrency,
    "schedules": bench_schedules,
    "fleet": bench_fleet,
    "records": bench_records,
    "identity": bench_identity,
    "notify": bench_notify,
    "web": bench_web,
}
RESULTS = Path(__file__).parent / "results"


def markdown(rows: list, meta: dict) -> str:
    lines = [
        "# norfab-hermes benchmarks",
        "",
        f"{meta['date']} on {meta['machine']} ({meta['cpus']} CPUs), Python {meta['python']}, scripted model on 127.0.0.1.",
        "",
        "| benchmark | metric | value | unit | note |",
        "|---|---|---:|---|---|",
    ]
    lines += [f"| {r['benchmark']} | {r['metric']} | {r['value']} | {r['unit']} | {r['note']} |" for r in rows]
    return "\n".join(lines) + "\n"


def main() -> None:
    names = sys.argv[1:] or list(BENCHMARKS)
    meta = {
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "machine": platform.platform(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
    }
    rows = []
    with ScriptedModelServer() as model:
        for name in names:
            started = time.time()
            rows += BENCHMARKS[name].run(model.base_url)
            print(f"{name}: {time.time() - started:.0f}s", flush=True)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "results.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    (RESULTS / "results.md").write_text(markdown(rows, meta))
    print(markdown(rows, meta))


if __name__ == "__main__":
    main()
