#!/usr/bin/env python3
"""
Install norfab-hermes the way an operator does, into fresh virtual environments, and prove each
host role works (make install-check; CI runs it).

1. Build the sdist, then the wheel from it (uv build).
2. Client side: a NorFab environment (``pip install norfab[nfcli]``), then plain
   ``pip install norfab-hermes``; the shell plugin and the Python client import, and neither
   Hermes nor the worker code is there.
3. Worker side: a dedicated environment and the one documented command,
   ``uv pip install --override worker-overrides.txt "norfab-hermes[worker]"``.
4. Run it, from the host folders in .ci/install-check/: a broker from the client environment
   (``nfcli -b -w``); the scripted model and a hermes worker from the worker environment
   (``nfcli -w`` in a folder of its own, with the broker's shared key); then, from the client
   environment, ``get_version`` and an ``invoke`` through the Python client, and the same agent
   through ``nfcli -c``'s ``hermes`` commands.
5. A hermes worker started from the client environment fails with the command that fixes it.
6. SIGINT to each ``nfcli`` alone, as the example systemd units stop them: each exits cleanly.

The documented commands get the package as a local wheel (PIP_FIND_LINKS, UV_FIND_LINKS);
everything else comes from the package index. Needs Linux, Python 3.11-3.13 and uv. Prints how
long each step took.
"""

import argparse
import json
import os
import re
import shlex
import shutil
import signal
import socket
import string
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.request
from pathlib import Path
from typing import Callable, Dict, List, Optional

REPO = Path(__file__).resolve().parent.parent
HOSTS = Path(__file__).resolve().parent / "install-check"
NORFAB = "norfab[nfcli]==0.25.0"
NORNIR = "norfab[nornirservice]==0.25.0"
CLIENT_INSTALL = ["pip", "install", "norfab-hermes"]
WORKER_INSTALL = ["uv", "pip", "install", "--override", "worker-overrides.txt", "norfab-hermes[worker]"]
ECHO = "ECHO: {}"  # the scripted model, without a scenario, echoes the last line it is asked
WORKER_MISSING = "the hermes worker needs hermes-agent, jsonschema, not installed in this environment"

# the commands run as an operator types them: without the Makefile's bytecode setting
CLEAN_ENV = {name: value for name, value in os.environ.items() if name != "UV_COMPILE_BYTECODE"}
timings: Dict[str, float] = {}
started: List[subprocess.Popen] = []


class CheckFailed(Exception):
    pass


def step(title: str) -> None:
    print(f"\n== {title}", flush=True)


def run(
    cmd: List[str],
    cwd: Path,
    env: Optional[dict] = None,
    timing: str = "",
    ok: bool = True,
    stdin: Optional[str] = None,
) -> subprocess.CompletedProcess:
    print(f"$ (cd {cwd} && {shlex.join(cmd)})", flush=True)
    began = time.monotonic()
    done = subprocess.run(
        cmd, cwd=cwd, env={**CLEAN_ENV, **(env or {})}, input=stdin, capture_output=True, text=True, timeout=900
    )
    if timing:
        timings[timing] = time.monotonic() - began
    if ok and done.returncode != 0:
        raise CheckFailed(f"{shlex.join(cmd)} exited {done.returncode}:\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    return done


def start(cmd: List[str], cwd: Path) -> subprocess.Popen:
    log = cwd / "nfcli.out" if "nfcli" in cmd[0] else cwd / "model.out"
    print(f"$ (cd {cwd} && {shlex.join(cmd)} &)  # output in {log.name}", flush=True)
    proc = subprocess.Popen(
        cmd, cwd=cwd, stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True, env=CLEAN_ENV
    )
    started.append(proc)
    return proc


def wait_for(what: str, test: Callable[[], bool], proc: subprocess.Popen, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        if test():
            return
        time.sleep(0.5)
    raise CheckFailed(f"{what}: not within {timeout:.0f}s (exit code {proc.poll()}); see {proc.args[0]}'s output")


def stop(proc: subprocess.Popen, name: str, timeout: float = 60) -> None:
    """SIGINT to the main process alone (KillMode=mixed, KillSignal=SIGINT): it stops its own children."""
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        raise CheckFailed(f"{name} did not stop within {timeout:.0f}s of SIGINT") from None
    if proc.returncode not in (0, -signal.SIGINT):  # what systemd counts as a clean stop
        raise CheckFailed(f"{name} exited {proc.returncode} after SIGINT")
    try:
        os.killpg(proc.pid, 0)
    except ProcessLookupError:
        return
    raise CheckFailed(f"{name} exited but left processes behind in its group {proc.pid}")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2):
            return True
    except OSError:
        return False


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def host_folder(work: Path, name: str, **values: str) -> Path:
    """A copy of .ci/install-check/<name>, with $endpoint, $shared_key, ... filled in its YAML files."""
    folder = shutil.copytree(HOSTS / name, work / name)
    for path in folder.rglob("*.yaml"):
        path.write_text(string.Template(path.read_text()).substitute(values))
    return folder


def check_client_side(work: Path, dist: Path, python: str) -> Path:
    step("client side: pip install norfab-hermes into an existing NorFab environment")
    venv = work / "client"
    run([python, "-m", "venv", str(venv)], work)
    pip_env = {"PIP_FIND_LINKS": " ".join(filter(None, [os.environ.get("PIP_FIND_LINKS"), str(dist)]))}
    run([str(venv / "bin/pip"), "install", NORFAB], work, pip_env, "client: pip install norfab[nfcli] (NorFab)")
    done = run([str(venv / "bin/pip"), *CLIENT_INSTALL[1:]], work, pip_env, "client: pip install norfab-hermes")
    print("\n".join(line for line in done.stdout.splitlines() if not line.startswith("WARNING: Location")))
    run([str(venv / "bin/pip"), "check"], work)
    print(run([str(venv / "bin/python"), str(HOSTS / "client-host/imports.py")], work).stdout.strip())
    return venv


def check_worker_side(work: Path, dist: Path, python: str, uv: str) -> Path:
    step("worker side: the documented command in a dedicated environment")
    venv = work / "worker"
    run([uv, "venv", "--quiet", "--python", python, str(venv)], work)
    shutil.copy(REPO / "worker-overrides.txt", work / "worker-overrides.txt")
    env = {"VIRTUAL_ENV": str(venv), "UV_FIND_LINKS": str(dist)}
    run([uv, *WORKER_INSTALL[1:]], work, env, "worker: uv pip install --override ... norfab-hermes[worker]")
    # what uv pip check still finds must be hermes-agent's own pins of the overridden libraries, no more
    found = run([uv, "pip", "check"], work, env, ok=False)
    pins = [line for line in (work / "worker-overrides.txt").read_text().splitlines() if "==" in line]
    overrides = {canonical(name): version for name, version in (pin.strip().split("==") for pin in pins)}
    mismatches = re.findall(
        r"`(\S+)` requires `([^=`]+)==[^`]+`, but `([^`]+)` is installed", found.stdout + found.stderr
    )
    explained = {canonical(name): installed for package, name, installed in mismatches if package == "hermes-agent"}
    if explained != overrides or len(mismatches) != len(overrides):
        raise CheckFailed(f"uv pip check beyond the overrides:\n{found.stdout}{found.stderr}")
    print(f"uv pip check: only hermes-agent's own pins of {', '.join(sorted(overrides))}, overridden")
    # docs/quick-start.md: a hermes worker in the same nfcli as a Nornir worker, with the same file
    run([uv, *WORKER_INSTALL[1:], NORNIR, "--dry-run"], work, env, "worker + nornir: uv pip install --dry-run")
    return venv


def check_running(work: Path, client: Path, worker: Path) -> None:
    step("run: a broker (client environment), the scripted model and a hermes worker (worker environment)")
    endpoint, model_port = f"tcp://127.0.0.1:{free_port()}", free_port()
    broker_host = host_folder(work, "broker-host", endpoint=endpoint, model_url=f"http://127.0.0.1:{model_port}/v1")
    broker = start([str(client / "bin/nfcli"), "-i", "inventory.yaml", "-b", "-w"], broker_host)
    wait_for("broker key", (broker_host / "__norfab__/files/broker/public_keys/broker.key").exists, broker)
    shown = run([str(client / "bin/nfcli"), "--show-broker-shared-key"], broker_host, ok=False)
    key = re.search(r"shared_key: (\S+)", shown.stdout + shown.stderr).group(1)
    model = start(
        [str(worker / "bin/python"), "-m", "norfab_hermes.testing.scripted_model", "--port", str(model_port)], work
    )
    wait_for("scripted model", lambda: answers(f"http://127.0.0.1:{model_port}/v1/models"), model)

    worker_host = host_folder(work, "worker-host", endpoint=endpoint, shared_key=key)
    began = time.monotonic()
    hermes = start([str(worker / "bin/nfcli"), "-i", "inventory.yaml", "-w"], worker_host)
    worker_log = worker_host / "__norfab__/logs/worker-hermes-worker-1.jsonl"
    wait_for("hermes worker start", lambda: worker_log.exists() and "Started in" in worker_log.read_text(), hermes)
    timings["hermes worker: nfcli -w until started"] = time.monotonic() - began

    step("client host: get_version and invoke through the Python client")
    client_host = host_folder(work, "client-host", endpoint=endpoint, shared_key=key)
    question = "ping from the Python client"
    asked = run([str(client / "bin/python"), "ask.py", "hello", question], client_host, timing="client: ask.py")
    answer = json.loads(asked.stdout.strip().splitlines()[-1])
    version, result = answer["versions"]["hermes-worker-1"]["result"], answer["invoke"]["result"]
    print(f"get_version: {version}\ninvoke: {result['response']!r}, stop_reason {result['stop_reason']}")
    if (version["hermes-agent"], version["norfab"]) != ("0.19.0", "0.25.0"):
        raise CheckFailed(f"unexpected versions: {version}")
    if (result["response"], result["stop_reason"]) != (ECHO.format(question), "completed"):
        raise CheckFailed(f"unexpected invoke result: {result}")

    step("client host: the nf# hermes commands (nfcli -c)")
    question = "ping from the nf# shell"
    lines = f'hermes agents\nhermes invoke hello "{question}"\nexit\n'
    shell = run([str(client / "bin/nfcli"), "-i", "inventory.yaml", "-c"], client_host, stdin=lines).stdout
    for expected in ("hello", ECHO.format(question), "completed | run "):
        if expected not in shell:
            raise CheckFailed(f"the nf# output lacks {expected!r}:\n{shell[-3000:]}")
    print(f"nf# hermes invoke hello: {ECHO.format(question)!r}")

    step("the client environment cannot host a hermes worker, and says how to fix it")
    lonely = host_folder(work, "client-only-worker", endpoint=endpoint, shared_key=key)
    failed = run([str(client / "bin/nfcli"), "-i", "inventory.yaml", "-w"], lonely, ok=False).stderr
    if WORKER_MISSING not in failed:
        raise CheckFailed(f"no clear error for a hermes worker without the worker extra:\n{failed[-3000:]}")
    print(next(line for line in failed.splitlines() if WORKER_MISSING in line))

    step("stop: SIGINT to each nfcli alone, as the systemd units do")
    began = time.monotonic()
    stop(hermes, "hermes worker")
    timings["hermes worker: stop after SIGINT"] = time.monotonic() - began
    if "Hermes gateway stopped" not in worker_log.read_text():
        raise CheckFailed("the hermes worker exited without stopping its gateway")
    stop(broker, "broker")
    model.terminate()
    model.wait(30)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--uv", default="uv", help="uv executable")
    parser.add_argument("--python", default=sys.executable, help="Python for the new environments")
    parser.add_argument("--keep", action="store_true", help="keep the work folder (environments, logs)")
    args = parser.parse_args()
    uv = os.path.abspath(shutil.which(args.uv) or args.uv)  # the steps run in other folders
    work = Path(tempfile.mkdtemp(prefix="norfab-hermes-install-"))
    failed = False
    try:
        step(f"build (work folder {work})")
        dist = work / "dist"
        run([uv, "build", "--out-dir", str(dist)], REPO, timing="uv build (sdist, then wheel from it)")
        print("\n".join(sorted(p.name for p in dist.glob("*.*"))))
        client = check_client_side(work, dist, args.python)
        worker = check_worker_side(work, dist, args.python, uv)
        check_running(work, client, worker)
    except Exception as exc:
        print(f"\nINSTALL CHECK FAILED: {exc}", file=sys.stderr)
        if not isinstance(exc, (CheckFailed, subprocess.TimeoutExpired)):
            traceback.print_exc()
        failed = True
    finally:
        for proc in started:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
        step("timings (seconds)")
        for name, seconds in timings.items():
            print(f"{seconds:7.1f}  {name}")
        if args.keep or failed:
            print(f"work folder kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    print("\ninstall check", "FAILED" if failed else "passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
