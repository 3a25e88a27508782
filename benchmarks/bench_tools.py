"""Tool-call overhead: an agent's NorFab tool call vs the same client.run_job called directly."""

import tempfile
from pathlib import Path
from typing import Any, Dict, List

from common import WORKER, invoke, median, row, timed

from norfab_hermes.testing.embedded import hermes_worker, network, running_norfab

ROUNDS = 20
TOOL = {
    "input_schema": {"type": "object", "properties": {"FB": {"type": "string"}}, "required": ["FB"]},
    "norfab": {"service": "nornir", "task": "cli", "workers": "all", "kwargs": {"commands": ["show clock"]}},
}


def run(url: str) -> List[Dict[str, Any]]:
    agent = {"instructions": "You read clocks.", "toolsets": ["norfab"], "tools": {"read_clock": TOOL}}
    workers, files = network(["r1"], users={WORKER: hermes_worker(url, {"clocks": agent})})
    with running_norfab(Path(tempfile.mkdtemp(prefix="bench-tools-")), workers, files) as nf:
        client = nf.client

        def direct() -> None:
            reply = client.run_job(
                "nornir", "cli", kwargs={"commands": ["show clock"], "FB": "r1"}, workers="all", timeout=60
            )
            assert "show clock" in reply["nornir-worker-1"]["result"]["r1"]

        direct()  # SSH connection set up once
        invoke(client, "clocks", 'CALL read_clock {"FB": "r1"}')
        direct_times = [timed(direct) for _ in range(ROUNDS)]
        tool_times, with_tool, without_tool = [], [], []
        for i in range(ROUNDS):
            result = {}
            with_tool.append(
                timed(lambda: result.update(invoke(client, "clocks", f'CALL read_clock {{"FB": "r1"}} #{i}')))
            )
            [call] = result["tool_calls"]
            assert call["status"] == "completed", call
            tool_times.append(call["duration"])
            without_tool.append(timed(lambda: invoke(client, "clocks", f"no tool #{i}")))
    return [
        row(
            "tool call",
            "direct client.run_job(nornir.cli)",
            median(direct_times),
            "s",
            "median, from the benchmark process",
        ),
        row("tool call", "agent tool call", median(tool_times), "s", "median tool duration inside the run"),
        row(
            "tool call",
            "overhead ratio",
            median(tool_times) / median(direct_times),
            "x",
            "agent tool call / direct run_job",
        ),
        row("tool call", "invoke with one tool call", median(with_tool), "s", "median: 2 model calls + tool"),
        row("tool call", "invoke without tools", median(without_tool), "s", "median: 1 model call"),
    ]
