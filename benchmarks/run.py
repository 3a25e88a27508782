"""
Run every benchmark in one process and write benchmarks/results/results.md,
results.json and a copy of the JSON named by the run's time (results/<YYYYmmdd-HHMMSS>.json),
to compare a later run with. Speed and memory are reported as ratios and absolute
numbers from one run on this machine, each beside its target where it has one and the
anchors (SQLite raw insert, bare AIAgent, NorFab no-op); nothing here is a pass/fail test.

usage: python benchmarks/run.py [--compare OLD.json] [name ...]
       (names: hosting, tools, concurrency, schedules, fleet, records, identity, notify, million, agents, web)
       --compare: after the run, print OLD.json's value beside this run's for each figure
"""

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import bench_agents  # noqa: E402
import bench_concurrency  # noqa: E402
import bench_fleet  # noqa: E402
import bench_hosting  # noqa: E402
import bench_identity  # noqa: E402
import bench_million  # noqa: E402
import bench_notify  # noqa: E402
import bench_records  # noqa: E402
import bench_schedules  # noqa: E402
import bench_tools  # noqa: E402
import bench_web  # noqa: E402
from common import row, sqlite_insert_ms  # noqa: E402

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
    "agents": bench_agents,
    "million": bench_million,
    "web": bench_web,
}
RESULTS = Path(__file__).parent / "results"
MET = {True: "yes", False: "NO", None: "n/a"}


def markdown(rows: list, meta: dict) -> str:
    lines = [
        "# norfab-hermes benchmarks",
        "",
        f"{meta['date']} on {meta['machine']} ({meta['cpus']} CPUs), Python {meta['python']}, scripted model on 127.0.0.1.",
        "",
        "| benchmark | metric | value | unit | target | met | note |",
        "|---|---|---:|---|---|---|---|",
    ]
    lines += [
        f"| {r['benchmark']} | {r['metric']} | {r['value']} | {r['unit']} | {r.get('target', '')} "
        f"| {MET[r.get('met')]} | {r['note']} |"
        for r in rows
    ]
    return "\n".join(lines) + "\n"


def anchors() -> list:
    """Figures of no norfab-hermes code, to read the others against (the hosting bench measures the
    bare AIAgent and the NorFab no-op beside its own)."""
    return [
        row(
            "anchors",
            "SQLite raw insert",
            sqlite_insert_ms(),
            "ms",
            "anchor: median single-row committed insert, WAL, synchronous=NORMAL, temp dir",
        )
    ]


def compare(old: dict, rows: list) -> str:
    """This run's value of each figure beside the old run's."""
    before = {(r["benchmark"], r["metric"]): r["value"] for r in old["rows"]}
    lines = [
        f"compared with {old['meta']['date']}:",
        "| benchmark | metric | old | new | unit |",
        "|---|---|---:|---:|---|",
    ]
    for r in rows:
        was = before.get((r["benchmark"], r["metric"]), "-")
        lines.append(f"| {r['benchmark']} | {r['metric']} | {was} | {r['value']} | {r['unit']} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description="run the norfab-hermes benchmarks")
    parser.add_argument("--compare", type=Path, metavar="OLD.json", help="a results JSON of an earlier run")
    parser.add_argument("names", nargs="*", metavar="name", help=", ".join(BENCHMARKS) + " (default: all)")
    args = parser.parse_args()
    unknown = sorted(set(args.names) - set(BENCHMARKS))
    if unknown:
        parser.error(f"no benchmark {', '.join(unknown)}")
    old = json.loads(args.compare.read_text()) if args.compare else None  # fail before the run, not after
    names = args.names or list(BENCHMARKS)
    begun = time.localtime()
    meta = {
        "date": time.strftime("%Y-%m-%d %H:%M", begun),
        "machine": platform.platform(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
    }
    rows = anchors()
    with ScriptedModelServer() as model:
        for name in names:
            started = time.time()
            rows += BENCHMARKS[name].run(model.base_url)
            print(f"{name}: {time.time() - started:.0f}s", flush=True)
    RESULTS.mkdir(exist_ok=True)
    results = json.dumps({"meta": meta, "rows": rows}, indent=1)
    (RESULTS / "results.json").write_text(results)
    (RESULTS / f"{time.strftime('%Y%m%d-%H%M%S', begun)}.json").write_text(results)
    (RESULTS / "results.md").write_text(markdown(rows, meta))
    print(markdown(rows, meta))
    if old:
        print(compare(old, rows))


if __name__ == "__main__":
    main()
