"""
Running the benchmark: one lab per size, every scenario injected in turn, one structured invoke each.

A size's lab starts once (NorFab, FakeNOS, nornir, records, one hermes
worker); between scenarios only the scenario file changes, and the devices
answer from the new one at their next command. The nornir worker's device
connections are opened before the first scenario, so no scenario pays for
them. Each scenario asks the ``bench`` agent the same question with the
verdict's ``response_schema``, then reads what the model read (the session)
and scores the structured answer. The ground truth reaches the results only
after the run.
"""

import json
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

from ..models import BenchRun, BenchScenario, LabSettings, RunData
from ..runner import Runner
from ..scoring import Prices
from .investigator import ALL
from .lab import AGENT, WORKER, WORKERS, inject, running
from .scoring import RESPONSE_SCHEMA, score_run
from .topology import build

REQUEST = "Is anything wrong in the network right now? Check it and give your verdict."
JOB_TIMEOUT = 300  # seconds; the bench agent's run_timeout is shorter
WARM_TIMEOUT = 300


def warm(client: Any) -> None:
    """Open every device connection of the nornir worker (the first command of a device pays for its SSH login)."""
    client.run_job(
        "nornir", "cli", kwargs={"FB": ALL, "commands": ["terminal length 0"]}, workers="all", timeout=WARM_TIMEOUT
    )


def run_scenario(
    runner: Runner, scenario: BenchScenario, size: str, devices: List[str], prices: Optional[Prices], repeat: int = 1
) -> BenchRun:
    data = RunData(job=f"{size}-{scenario.index:02d}", repeat=repeat, model=runner.model, agent=AGENT, worker=WORKER)
    started = time.time()
    reply = runner.client.run_job(
        "hermes",
        "invoke",
        kwargs={"agent": AGENT, "instructions": REQUEST, "response_schema": RESPONSE_SCHEMA},
        workers=[WORKER],
        timeout=JOB_TIMEOUT,
    )
    seconds = time.time() - started
    answer = (reply or {}).get(WORKER) or {}
    result = answer.get("result")
    error = None
    if answer.get("failed") or not isinstance(result, dict):
        error = f"invoke failed: {answer.get('errors') or answer.get('status') or 'no answer'}"
        result = {}
    else:
        runner.count(data, result)
        try:
            runner.collect(data, AGENT, WORKER, result, via=None)
        except RuntimeError as failure:  # the verdict still counts; what it quotes cannot be checked
            error = f"the session could not be read: {failure}"
    run = score_run(
        scenario,
        result.get("structured_response"),
        devices,
        data.results,
        data.tool_calls,
        data.usage,
        size=size,
        model=runner.model,
        prices=prices,
    )
    run.seconds, run.repeat = round(seconds, 2), repeat
    run.stop_reason = result.get("stop_reason") or ""
    run.structured_error = result.get("structured_error")
    run.error = error
    return run


def write(folder: Path, run: BenchRun, scenario: BenchScenario) -> Path:
    again = f"-{run.repeat}" if run.repeat > 1 else ""  # a first run keeps the name a replay looks for
    path = folder / "runs" / f"{run.model.replace('/', '_')}-{run.size}-{run.index:02d}{again}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"scenario": scenario.model_dump(), "score": run.model_dump()}, indent=2))
    return path


def run_size(
    size: str,
    scenarios: List[BenchScenario],
    models: Dict[str, Optional[Callable[[], Any]]],
    folder: Path,
    scripted: Any = None,
    prices: Optional[Prices] = None,
    say: Callable[[str], None] = print,
    repeats: int = 1,
) -> Dict[str, List[BenchRun]]:
    """Every scenario ``repeats`` times for every model on one lab of ``size``; the scored runs by model
    (a real model answers differently from run to run: the table pools the repeats).

    ``models`` maps a model's name to the factory of its scripted decision
    logic (set on ``scripted``, the scripted model), or to None for the
    provider the agents already use.
    """
    network = build(size)
    devices = [n.name for n in network.nodes]
    started = time.time()
    results: Dict[str, List[BenchRun]] = {}
    with running(network, folder / "labs" / size, folder / "state" / size) as nf:
        inject(folder / "state" / size, scenarios[0])
        warm(nf.client)
        say(f"{size}: {len(devices)} devices, lab up and connected in {time.time() - started:.1f}s")
        for name, factory in models.items():
            runner = Runner(nf.client, LabSettings(topology=WORKERS), name)
            runs = results.setdefault(name, [])
            for repeat, scenario in ((r, s) for r in range(1, repeats + 1) for s in scenarios):
                if scripted is not None and factory is not None:
                    scripted.scenario = factory()
                inject(folder / "state" / size, scenario)
                run = run_scenario(runner, scenario, size, devices, prices, repeat)
                write(folder, run, scenario)
                runs.append(run)
                said = run.verdict or {}
                say(
                    f"{name} {size} #{scenario.index:02d}/{repeat} seed {scenario.seed}: truth {scenario.fault.kind}"
                    f" {scenario.fault.device or ''} {scenario.fault.interface or ''}; said "
                    f"{said.get('kind') if said.get('fault_found') else 'healthy' if said else 'nothing'}"
                    f" {said.get('device') or ''} {said.get('interface') or ''} ({run.seconds:.1f}s"
                    f"{', ' + run.error if run.error else ''}{', ' + run.structured_error if run.structured_error else ''})"
                )
    return results
