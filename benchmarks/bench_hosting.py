"""
Hosting costs: worker start time and memory vs number of profiles, memory
per active session, and invoke latency vs a bare AIAgent on the same model.
"""

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List

from common import (
    WORKER,
    cpu_seconds,
    invoke,
    median,
    meets,
    p95,
    row,
    rss_mb,
    started_in,
    timed,
    worker,
    worker_process,
)

from norfab_hermes.testing.embedded import running_norfab

ROUNDS = 20
SESSIONS = 20
STREAMS = 10
HOSTING_TARGET = "<= 10 ms"  # what hosting may add to a continued turn above the bare agent and the transport
CPU_TARGET = "<= 1.1x"  # the worker's CPU per continued turn against the bare agent's


def startup_and_memory(url: str) -> List[Dict[str, Any]]:
    rows, rss = [], {}
    for count in (1, 2, 10, 20, 50):
        base = Path(tempfile.mkdtemp(prefix=f"bench-start-{count}-"))
        with running_norfab(base, worker(url, count)) as nf:
            rss[count] = rss_mb(worker_process(nf.client))
        rows.append(
            row("worker start", f"{count} profiles", started_in(base), "s", "hermes worker __init__, from its log")
        )
    per_profile = (rss[50] - rss[1]) / 49
    rows.append(row("memory", "RSS with 1 profile", rss[1], "MiB"))
    rows.append(row("memory", "RSS per extra profile", per_profile, "MiB", "(RSS at 50 - RSS at 1) / 49"))
    return rows


def invoke_overhead(url: str) -> List[Dict[str, Any]]:
    bare = json.loads(
        subprocess.run(
            [sys.executable, str(Path(__file__).with_name("bare_agent.py")), url, str(ROUNDS)],
            check=True,
            capture_output=True,
            text=True,
        )
        .stdout.strip()
        .splitlines()[-1]
    )
    with running_norfab(Path(tempfile.mkdtemp(prefix="bench-invoke-")), worker(url, 1)) as nf:
        client = nf.client
        process = worker_process(client)
        invoke(client, "agent-00", "warm up")
        cpu = cpu_seconds(process)
        new = [timed(lambda i=i: invoke(client, "agent-00", f"hello {i}")) for i in range(ROUNDS)]
        cpu_new = (cpu_seconds(process) - cpu) / ROUNDS
        session = invoke(client, "agent-00", "start")["session_id"]
        cpu = cpu_seconds(process)
        continued = [
            timed(lambda i=i: invoke(client, "agent-00", f"again {i}", session_id=session)) for i in range(ROUNDS)
        ]
        cpu_continued = (cpu_seconds(process) - cpu) / ROUNDS
        # the transport alone: a job the worker answers from memory
        trip = median([timed(lambda: client.run_job("hermes", "get_status", workers=WORKER)) for _ in range(ROUNDS)])
        before = rss_mb(process)
        for i in range(SESSIONS):
            invoke(client, "agent-00", f"session {i}")
        per_session = (rss_mb(process) - before) / SESSIONS
    note = "client.run_job(hermes.invoke) vs AIAgent() + run_conversation() in one process"
    hosting_ms = (median(continued) - bare["continued"] - trip) * 1000
    cpu_ratio = cpu_continued / bare["cpu_continued"]
    return [
        row("invoke latency", "new session, hermes.invoke", median(new), "s", "median, includes title call"),
        row("invoke latency", "new session, bare AIAgent", bare["new"], "s", "median; anchor"),
        row("invoke latency", "new session ratio", median(new) / bare["new"], "x", note),
        row("invoke latency", "continued session, hermes.invoke", median(continued), "s", "median"),
        row("invoke latency", "continued session, bare AIAgent", bare["continued"], "s", "median; anchor"),
        row("invoke latency", "continued session ratio", median(continued) / bare["continued"], "x", note),
        row(
            "invoke latency",
            "NorFab round trip, hermes.get_status",
            trip,
            "s",
            "median; anchor: the NorFab no-op (broker, worker and client, no turn)",
        ),
        row(
            "invoke latency",
            "continued session ratio less the round trip",
            (median(continued) - trip) / bare["continued"],
            "x",
            "what hosting adds to the turn itself",
        ),
        row(
            "invoke latency",
            "hosting above the NorFab no-op, continued turn",
            hosting_ms,
            "ms",
            "continued hermes.invoke - continued bare AIAgent - NorFab round trip, medians",
            HOSTING_TARGET,
            meets(hosting_ms, HOSTING_TARGET),
        ),
        row(
            "worker CPU", "per new-session turn", cpu_new, "s", f"hermes worker process, user+system, mean of {ROUNDS}"
        ),
        row(
            "worker CPU",
            "per continued-session turn",
            cpu_continued,
            "s",
            f"hermes worker process, user+system, mean of {ROUNDS}",
        ),
        row("worker CPU", "bare AIAgent per new-session turn", bare["cpu_new"], "s", f"its process, mean of {ROUNDS}"),
        row(
            "worker CPU",
            "bare AIAgent per continued-session turn",
            bare["cpu_continued"],
            "s",
            f"its process, mean of {ROUNDS}",
        ),
        row(
            "worker CPU",
            "continued-session ratio",
            cpu_ratio,
            "x",
            "hermes worker / bare AIAgent",
            CPU_TARGET,
            meets(cpu_ratio, CPU_TARGET),
        ),
        row("memory", "RSS per active session", per_session, "MiB", f"after {SESSIONS} new sessions"),
    ]


def first_reply(url: str) -> List[Dict[str, Any]]:
    """How long after the model's first word the caller sees reply text (the model streams a word every 50 ms)."""
    from norfab_hermes.testing.scripted_model import ScriptedModel, ScriptedModelServer

    delays = []
    with (
        ScriptedModelServer(ScriptedModel()) as model,
        running_norfab(Path(tempfile.mkdtemp(prefix="bench-stream-")), worker(model.base_url, 1)) as nf,
    ):
        invoke(nf.client, "agent-00", "warm up")
        for _ in range(STREAMS):
            future = nf.client.submit_job(
                "hermes",
                "invoke",
                kwargs={"agent": "agent-00", "instructions": "STREAM 20 0.05"},
                workers=WORKER,
                timeout=60,
            )
            seen = next(time.time() for e in future.events(timeout=30) if (e.get("extras") or {}).get("reply"))
            future.result(timeout=30)
            delays.append(seen - model.model.first_tokens[-1])
    return [
        row("streaming", "first reply text after the model's first token", median(delays), "s", f"median of {STREAMS}"),
        row("streaming", "first reply text, p95", p95(delays), "s", "job event received by the client"),
    ]


def run(url: str) -> List[Dict[str, Any]]:
    return startup_and_memory(url) + invoke_overhead(url) + first_reply(url)
