"""
Bare Hermes AIAgent on the scripted model, in its own process: the baseline
that hermes.invoke is compared with. Prints JSON: median latency and mean
CPU seconds (this process) per turn; with --in-flight, the seconds of a batch of N
conversations run at once on threads of this one process (N from the comma list), each
model call taking LATENCY seconds: the parallel efficiency Hermes itself reaches here.

usage: python bare_agent.py BASE_URL ROUNDS
       python bare_agent.py BASE_URL --in-flight 1,5,10,20 LATENCY
"""

import concurrent.futures
import json
import os
import statistics
import sys
import tempfile
import time
from typing import Any, Callable

BASE_URL = sys.argv[1]
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
if sys.argv[2] == "--in-flight":
    counts, latency = [int(n) for n in sys.argv[3].split(",")], float(sys.argv[4])

    def batch(count: int) -> float:
        with concurrent.futures.ThreadPoolExecutor(count) as pool:
            return timed(
                lambda: list(pool.map(lambda i: agent().run_conversation(f"SLEEP {latency} #{i}"), range(count)))
            )

    batch(4)  # warm up the threads' clients
    single = statistics.median([batch(1) for _ in range(3)])
    print(json.dumps({"single": single, "batches": {str(count): batch(count) for count in counts}}))
    sys.exit(0)
ROUNDS = int(sys.argv[2])
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
