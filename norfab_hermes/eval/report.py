"""
The eval's results: a JSON file per run, and a Markdown table, one row per
job, each metric as mean and spread (standard deviation) over the repeats.
"""

import json
import statistics
from pathlib import Path
from typing import Callable, Dict, List, Optional

from .models import Job, RunData
from .scoring import RunScore

COLUMNS = [
    "job",
    "runs",
    "pass",
    "verdict correct",
    "fabricated quotes",
    "evidence quoted",
    "needed tools",
    "unneeded calls",
    "unsafe calls",
    "refused calls",
    "approvals asked",
    "model calls",
    "tokens in",
    "tokens out",
    "cost $",
    "time s",
]


def spread(values: List[float], digits: int = 1) -> str:
    """Mean, and the standard deviation when there are several values: '12.3 ±0.4'."""
    if not values:
        return "-"
    mean = statistics.fmean(values)
    text = f"{mean:.{digits}f}"
    return f"{text} ±{statistics.stdev(values):.{digits}f}" if len(values) > 1 else text


def share(runs: List[RunScore], test: Callable[[RunScore], bool]) -> str:
    return f"{sum(1 for r in runs if test(r))}/{len(runs)}"


def row(job: Job, runs: List[RunScore]) -> List[str]:
    if job.needs:
        return [job.id, "0", f"needs: {job.needs}"] + ["-"] * (len(COLUMNS) - 3)
    if not runs:
        return [job.id, "0", "not run"] + ["-"] * (len(COLUMNS) - 3)
    needed = len(job.truth.needed_tools) or 1
    costs = [r.cost_usd for r in runs if r.cost_usd is not None]
    return [
        job.id,
        str(len(runs)),
        share(runs, lambda r: r.passed),
        share(runs, lambda r: r.verdict == "correct"),
        spread([r.fabricated for r in runs]),
        spread([r.evidence for r in runs], 2),
        spread([len(r.tools.needed) / needed for r in runs], 2),
        spread([len(r.tools.unneeded) for r in runs]),
        spread([len(r.tools.unsafe) for r in runs]),
        spread([r.tools.refused for r in runs]),
        spread([r.tools.approvals for r in runs]),
        spread([r.model_calls for r in runs]),
        spread([r.input_tokens for r in runs], 0),
        spread([r.output_tokens for r in runs], 0),
        spread(costs, 4) if len(costs) == len(runs) else "-",
        spread([r.seconds for r in runs]),
    ]


def table(jobs: List[Job], scores: List[RunScore]) -> str:
    by_job: Dict[str, List[RunScore]] = {}
    for result in scores:
        by_job.setdefault(result.job, []).append(result)
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(row(job, by_job.get(job.id, []))) + " |" for job in jobs]
    return "\n".join(lines)


def failures(scores: List[RunScore]) -> List[str]:
    return [f"{s.job} #{s.repeat}: {'; '.join(s.reasons)}" for s in scores if not s.passed]


def write_run(folder: Path, job: Job, data: RunData, result: RunScore) -> Path:
    path = folder / "runs" / f"{job.id}-{data.repeat}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {"job": job.model_dump(), "run": data.model_dump(), "score": result.model_dump()}
    path.write_text(json.dumps(record, indent=2))
    return path


def write_table(folder: Path, text: str, header: Optional[str] = None) -> Path:
    path = folder / "table.md"
    path.write_text((header + "\n\n" if header else "") + text + "\n")
    return path
