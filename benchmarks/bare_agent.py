"""
Bare Hermes AIAgent on the scripted model, in its own process: the baseline
that hermes.invoke is compared with. Prints JSON: median latency and mean
CPU seconds (this process) per turn.

usage: python bare_agent.py BASE_URL ROUNDS
"""

import json
import os
import statistics
import sys
import tempfile
import time
from typing import Any, Callable

BASE_URL, ROUNDS = sys.argv[1], int(sys.argv[2])
os.environ["HERMES_HOME"] = tempfile.mkdtemp(prefix="bare-hermes-")
with open(os.path.join(os.environ["HERMES_HOME"], "config.yaml"), "w") as f:
    f.write("agent: {environment_probe: false}\nsecurity: {tirith_enabled: false}\n")

from run_agent import AIAgent  # noqa: E402  (after HERMES_HOME)


def agent() -> AIAgent:
    return AIAgent(
        base_url=BASE_URL,
        api_key="sk-bench",
        provider="custom",
        model="scripted-model",
        quiet_mode=True,
        enabled_toolsets=[],
        max_iterations=5,
        tool_delay=0.0,
        platform="norfab",
    )


def timed(fn: Callable[[], Any]) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


agent().run_conversation("warm up")  # first use imports the SDK and builds clients
cpu = time.process_time()
new = [timed(lambda i=i: agent().run_conversation(f"hello {i}")) for i in range(ROUNDS)]
cpu_new = (time.process_time() - cpu) / ROUNDS
session = agent()
history = []


def turn(i: int) -> None:
    global history
    history = session.run_conversation(f"again {i}", conversation_history=history)["messages"]


cpu = time.process_time()
continued = [timed(lambda i=i: turn(i)) for i in range(ROUNDS)]
cpu_continued = (time.process_time() - cpu) / ROUNDS
print(
    json.dumps(
        {
            "new": statistics.median(new),
            "continued": statistics.median(continued),
            "cpu_new": cpu_new,
            "cpu_continued": cpu_continued,
        }
    )
)
