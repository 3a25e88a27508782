"""
``python -m norfab_hermes.eval.bench``: the fault benchmark on generated labs, and its table.

The agents use the scripted model, each ``--model`` in turn (the generic
investigator ``baseline`` by default), unless ``NORFAB_HERMES_BASE_URL``
names a real provider. Results go to ``<results>/bench-<timestamp>/``: the
scenarios drawn (kind and seed of each, to replay one with ``--replay``),
a JSON file per run (scenario with its ground truth, verdict, score), and
``table.md``. Exits 1 when a scripted baseline run could not be made or read.
"""

import argparse
import json
import sys
from contextlib import ExitStack
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

from ..cli import prices
from ..lab import provider, scripted_model
from ..models import BenchScenario
from . import report
from .faults import HEALTHY, KINDS, plan, scenario
from .investigator import MODELS
from .runner import run_size
from .scoring import summary
from .topology import SIZES, build


def arguments(argv: Optional[List[str]]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m norfab_hermes.eval.bench", description=__doc__.strip().split("\n\n")[0]
    )
    parser.add_argument("--size", nargs="+", default=["small"], choices=list(SIZES), help="lab sizes (default: small)")
    parser.add_argument("--scenarios", type=int, default=10, help="scenarios per size (default: 10)")
    parser.add_argument("--seed", type=int, default=7, help="seed the scenarios are drawn from (default: 7)")
    parser.add_argument(
        "--repeats", type=int, default=1, help="runs of every scenario per model, pooled in the table (default: 1)"
    )
    parser.add_argument(
        "--replay",
        nargs="+",
        default=[],
        metavar="KIND:SEED",
        help=f"run these scenarios instead of drawing them, e.g. crc_errors:123 {HEALTHY}:9 (kinds: {', '.join(KINDS)})",
    )
    parser.add_argument(
        "--model",
        nargs="+",
        default=["baseline"],
        choices=list(MODELS),
        help="scripted models to run, in turn (default: baseline); ignored with a real provider",
    )
    parser.add_argument(
        "--price", action="append", default=[], metavar="MODEL=PROMPT,COMPLETION", help="USD per million tokens"
    )
    parser.add_argument("--results", default="eval/results", help="where results go (default: eval/results)")
    args = parser.parse_args(argv)
    if args.scenarios < 1 or args.repeats < 1:
        parser.error("--scenarios and --repeats must be 1 or more")
    for item in args.replay:
        kind, _, seed = item.partition(":")
        if (kind != HEALTHY and kind not in KINDS) or not seed.isdigit():
            parser.error(f"--replay {item}: expected KIND:SEED with KIND one of {HEALTHY}, {', '.join(KINDS)}")
    return args


def drawn(size: str, args: argparse.Namespace) -> List[BenchScenario]:
    network = build(size)
    if args.replay:
        return [
            scenario(network, kind, int(seed), index)
            for index, (kind, _, seed) in enumerate(item.partition(":") for item in args.replay)
        ]
    return plan(network, args.scenarios, args.seed)


def main(argv: Optional[List[str]] = None) -> int:
    args = arguments(argv)
    real = provider()
    folder = Path(args.results) / f"bench-{datetime.now().strftime('%Y%m%d-%H%M%S')}"
    folder.mkdir(parents=True, exist_ok=True)
    names = [real] if real else args.model
    print(f"models: {', '.join(names)}; sizes: {', '.join(args.size)}; seed {args.seed}; results in {folder}")
    rows = []
    broken = []
    with ExitStack() as stack:
        scripted = None if real else stack.enter_context(scripted_model())
        models: Dict[str, Optional[Callable[[], Any]]] = {real: None} if real else {n: MODELS[n] for n in args.model}
        for size in args.size:
            scenarios = drawn(size, args)
            (folder / f"scenarios-{size}.json").write_text(
                json.dumps([{"index": s.index, "kind": s.fault.kind, "seed": s.seed} for s in scenarios], indent=2)
            )
            scored = run_size(size, scenarios, models, folder, scripted, prices(args.price), repeats=args.repeats)
            for name, runs in scored.items():
                rows.append((size, name, summary(runs)))
                broken += [f"{name} {size} #{r.index:02d}: {r.error}" for r in runs if r.error and name == "baseline"]
    header = f"Seed {args.seed}{' (replayed: ' + ' '.join(args.replay) + ')' if args.replay else ''}; command: python -m norfab_hermes.eval.bench {' '.join(argv if argv is not None else sys.argv[1:])}"
    text = report.document(rows, header)
    (folder / "table.md").write_text(text)
    print("\n" + text)
    if broken:
        print("runs that could not be made or read:\n  " + "\n  ".join(broken))
    return 1 if broken and not real else 0
