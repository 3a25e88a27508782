"""
``python -m norfab_hermes.eval``: run the operator jobs on the lab and print the table.

The agents use the scripted model, each job on its playbook, unless
``NORFAB_HERMES_BASE_URL`` (with ``NORFAB_HERMES_MODEL``,
``NORFAB_HERMES_API_KEY_ENV``, ``NORFAB_HERMES_PROVIDER``) names a real
provider. Results go to ``<results>/<timestamp>/``: a JSON file per run, the
table in ``table.md``, and the lab copy the runs used (its logs included).
Exits 1 when a scripted run scores below what its job expects.
"""

import argparse
import shutil
import sys
from contextlib import ExitStack
from datetime import datetime, timezone
from pathlib import Path
from typing import List, Optional

from . import report
from .lab import SCRIPTED_MODEL, lab_warnings, provider, running_lab, scripted_model, settings
from .models import load_jobs
from .runner import Runner, evaluate
from .scoring import Prices


def prices(entries: List[str]) -> Prices:
    """``MODEL=PROMPT,COMPLETION`` (USD per million tokens) entries as a table."""
    table: Prices = {}
    for entry in entries:
        model, _, numbers = entry.rpartition("=")
        try:
            prompt, completion = (float(n) for n in numbers.split(","))
        except ValueError:
            raise SystemExit(
                f"--price {entry}: expected MODEL=PROMPT,COMPLETION in USD per million tokens, e.g. gpt-4o-mini=0.15,0.60"
            )
        if not model:
            raise SystemExit(f"--price {entry}: the model id is missing, e.g. gpt-4o-mini=0.15,0.60")
        table[model] = (prompt, completion)
    return table


def arguments(argv: Optional[List[str]]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m norfab_hermes.eval", description=__doc__.strip().split("\n\n")[0])
    parser.add_argument("--lab", default="examples/lab", help="the lab folder (default: examples/lab)")
    parser.add_argument("--jobs", help="job files (default: LAB/eval/jobs)")
    parser.add_argument("--playbooks", help="scripted model playbooks (default: LAB/eval/playbooks)")
    parser.add_argument(
        "--only", nargs="*", default=[], help="run only the jobs whose ids start with these, e.g. 01 05"
    )
    parser.add_argument("--repeats", type=int, default=1, help="runs per job (default: 1)")
    parser.add_argument(
        "--price",
        action="append",
        default=[],
        metavar="MODEL=PROMPT,COMPLETION",
        help="USD per million prompt and completion tokens of a model id; repeat for several",
    )
    parser.add_argument("--results", default="eval/results", help="where results go (default: eval/results)")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be 1 or more")
    lab = Path(args.lab)
    args.jobs = Path(args.jobs or lab / "eval" / "jobs")
    args.playbooks = Path(args.playbooks or lab / "eval" / "playbooks")
    return args


def main(argv: Optional[List[str]] = None) -> int:
    args = arguments(argv)
    try:
        jobs = load_jobs(args.jobs, args.only)
        catalog = {job.id: job for job in load_jobs(args.jobs)}  # earlier requests may name any job
        lab = settings(Path(args.lab))
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    price_table = prices(args.price)
    real = provider()
    folder = Path(args.results) / datetime.now().strftime("%Y%m%d-%H%M%S")
    folder.mkdir(parents=True, exist_ok=True)
    model_name = real or SCRIPTED_MODEL
    print(
        f"model: {real or f'scripted ({args.playbooks})'}; {len(jobs)} jobs, {args.repeats} repeat(s); results in {folder}"
    )
    with ExitStack() as stack:
        model = None if real else stack.enter_context(scripted_model())
        nf = stack.enter_context(running_lab(Path(args.lab), folder / "lab"))
        runner = Runner(nf.client, lab, model_name, catalog)
        scores = evaluate(runner, jobs, args.repeats, folder, model, args.playbooks, price_table)
        ended = datetime.now(timezone.utc)
    header = f"Model: {model_name}. {args.repeats} run(s) per job; mean ±standard deviation."
    text = report.table(jobs, scores)
    report.write_table(folder, text, header)
    print(f"\n{header}\n\n{text}\n")
    failed = report.failures(scores)
    if failed:
        print(f"runs below what their jobs expect (the lab copy and its logs are kept in {folder / 'lab'}):")
        print("  " + "\n  ".join(failed))
        told = lab_warnings(folder / "lab", ended)
        if told:
            print("what the lab logged last (warnings and errors):\n  " + "\n  ".join(told))
    else:
        shutil.rmtree(folder / "lab", ignore_errors=True)
    return exit_code(failed, real)


def exit_code(failed: List[str], real: Optional[str]) -> int:
    """1 when a scripted run scored below what its job expects: the lab, the agents or the scorer regressed.

    A real provider's runs are measurements, not a test of this code: they are reported, never fatal.
    """
    return 1 if failed and not real else 0
