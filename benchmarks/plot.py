"""
Plot the concurrency rows of a results JSON: the batch's seconds and the parallel efficiency
against the runs in flight, as a hand-written SVG (no plotting dependency); the bare AIAgent's
efficiency, where the run measured it, is drawn beside the worker's as the anchor.

usage: python benchmarks/plot.py [RESULTS.json] [OUT.svg]
       (defaults: benchmarks/results/results.json, docs/img/performance-concurrency.svg)
"""

import json
import re
import sys
from pathlib import Path
from typing import Dict, List, Tuple

HERE = Path(__file__).parent
WIDTH, HEIGHT, PANEL, LEFT, TOP, BOTTOM = 760, 300, 380, 60, 40, 50
PLOT_W, PLOT_H = PANEL - LEFT - 30, HEIGHT - TOP - BOTTOM
WORKER_ROW = re.compile(r"parallel efficiency N=(\d+)$")
BARE_ROW = re.compile(r"parallel efficiency N=(\d+), bare AIAgent$")
Points = List[Tuple[int, float]]


def concurrency(results: Dict) -> List[Tuple[int, float, float]]:
    """(runs in flight, batch seconds, efficiency) of each "parallel efficiency N=..." row: its note
    starts with the batch's seconds ("2.42s; ...")."""
    points = []
    for r in results["rows"]:
        match = WORKER_ROW.match(r["metric"])
        if r["benchmark"] == "concurrency" and match:
            seconds = float(r["note"].split(";")[0].rstrip("s"))
            points.append((int(match.group(1)), seconds, r["value"]))
    return sorted(points)


def bare(results: Dict) -> Points:
    """(runs in flight, efficiency) of the bare AIAgent's rows."""
    rows = [(BARE_ROW.match(r["metric"]), r["value"]) for r in results["rows"] if r["benchmark"] == "concurrency"]
    return sorted((int(match.group(1)), value) for match, value in rows if match)


def panel(x0: int, title: str, points: Points, top: float, ticks: List[float], fmt: str, anchor: Points = ()) -> str:
    most = max(n for n, _ in points)

    def at(n: float, v: float) -> Tuple[float, float]:
        return x0 + LEFT + PLOT_W * n / most, TOP + PLOT_H * (1 - v / top)

    parts = [f'<text x="{x0 + LEFT + PLOT_W / 2}" y="22" text-anchor="middle" font-weight="bold">{title}</text>']
    for v in ticks:
        _, y = at(0, v)
        parts.append(f'<line x1="{x0 + LEFT}" y1="{y:.1f}" x2="{x0 + LEFT + PLOT_W}" y2="{y:.1f}" stroke="#ddd"/>')
        parts.append(f'<text x="{x0 + LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{v:{fmt}}</text>')
    for n, _ in points:
        x, _ = at(n, 0)
        parts.append(f'<text x="{x:.1f}" y="{TOP + PLOT_H + 18}" text-anchor="middle">{n}</text>')
    parts.append(f'<text x="{x0 + LEFT + PLOT_W / 2}" y="{HEIGHT - 8}" text-anchor="middle">runs in flight (N)</text>')
    for line_points, colour, label, below in ((anchor, "#999", "bare AIAgent", 16), (points, "#1f6feb", "worker", -9)):
        if not line_points:
            continue
        line = " ".join("{:.1f},{:.1f}".format(*at(n, v)) for n, v in line_points)
        parts.append(f'<polyline points="{line}" fill="none" stroke="{colour}" stroke-width="2"/>')
        for n, v in line_points:
            x, y = at(n, v)
            parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="4" fill="{colour}"/>')
            parts.append(f'<text x="{x:.1f}" y="{y + below:.1f}" text-anchor="middle">{v:{fmt}}</text>')
        if anchor:  # a legend only where there are two lines
            x, y = at(*line_points[-1])
            parts.append(
                f'<text x="{x - 8:.1f}" y="{y + below + (13 if below > 0 else -13):.1f}" text-anchor="end" fill="{colour}">{label}</text>'
            )
    return "\n".join(parts)


def svg(points: List[Tuple[int, float, float]], when: str, anchor: Points = ()) -> str:
    slowest = max(s for _, s, _ in points)
    top = float(int(slowest) + 1)
    latency = panel(0, "batch latency (s)", [(n, s) for n, s, _ in points], top, [0, top / 2, top], ".2f")
    efficiency = panel(
        PANEL, "parallel efficiency", [(n, e) for n, _, e in points], 1.0, [0, 0.5, 0.8, 0.9, 1], ".2f", anchor
    )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}"'
        ' font-family="sans-serif" font-size="12">\n'
        f"<title>hermes.invoke batches against runs in flight, {when}</title>\n"
        f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>\n{latency}\n{efficiency}\n</svg>\n'
    )


def main() -> None:
    source = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "results" / "results.json"
    out = Path(sys.argv[2]) if len(sys.argv) > 2 else HERE.parent / "docs" / "img" / "performance-concurrency.svg"
    results = json.loads(source.read_text())
    points = concurrency(results)
    if not points:
        sys.exit(f"{source} has no concurrency rows: run python benchmarks/run.py concurrency")
    out.write_text(svg(points, results["meta"]["date"], bare(results)))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
