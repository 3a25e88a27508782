#!/usr/bin/env python3
"""
Install norfab-hermes the way an operator does, on fresh virtual environments,
and prove each host role works (make install-check; CI runs it).

1. Build the sdist and wheel (uv build).
2. Client side: an existing NorFab environment (``pip install norfab[nfcli]``),
   then plain ``pip install norfab-hermes``; import the shell plugin and the
   Python client, and check that neither Hermes nor the worker code came along.
3. Worker side: a dedicated environment and the one documented command,
   ``uv pip install --override worker-overrides.txt "norfab-hermes[worker]"``.
4. Run it: a broker from the client environment (``nfcli -b -w``), the scripted
   model and a hermes worker from the worker environment (``nfcli -w`` in a
   folder of its own, with the broker's shared key), then from the client
   environment ``get_version`` and an ``invoke`` through the Python client, and
   the same agent through ``nfcli -c``'s ``hermes`` commands.
5. A hermes worker started where only the client side is installed fails with
   the command that fixes it.
6. Stop every process with SIGINT to its main process only, as the example
   systemd units do, and check that each exits on its own.

The package is offered to the documented commands as a local wheel
(PIP_FIND_LINKS, UV_FIND_LINKS); everything else comes from the package index.
Needs Linux, Python 3.11-3.13 and uv; prints how long each install took.
"""

import argparse
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.request
from pathlib import Path
from typing import Callable, Dict, List, Optional

REPO = Path(__file__).resolve().parent.parent
NORFAB = "norfab[nfcli]==0.25.0"
CLIENT_INSTALL = ["pip", "install", "norfab-hermes"]
WORKER_INSTALL = ["uv", "pip", "install", "--override", "worker-overrides.txt", "norfab-hermes[worker]"]
HERMES_MODULES = ("gateway", "run_agent", "hermes_cli", "cron", "jsonschema")
ANSWER = "ECHO: {}"  # the scripted model, without a scenario, echoes the last line it is asked

# the commands run as an operator types them: without the Makefile's bytecode setting
CLEAN_ENV = {name: value for name, value in os.environ.items() if name != "UV_COMPILE_BYTECODE"}
timings: Dict[str, float] = {}
started: List[subprocess.Popen] = []


class CheckFailed(Exception):
    pass


def step(title: str) -> None:
    print(f"\n== {title}", flush=True)


def run(cmd: List[str], cwd: Path, env: Optional[dict] = None, timing: Optional[str] = None, log: Optional[Path] = None,
        timeout: float = 900, ok: bool = True) -> subprocess.CompletedProcess:
    print(f"$ (cd {cwd} && {shlex.join(cmd)})", flush=True)
    began = time.monotonic()
    done = subprocess.run(cmd, cwd=cwd, env={**CLEAN_ENV, **(env or {})}, capture_output=True, text=True,
                          timeout=timeout)
    if timing:
        timings[timing] = time.monotonic() - began
    if log:
        log.write_text(done.stdout + done.stderr)
    if ok and done.returncode != 0:
        raise CheckFailed(f"{' '.join(cmd)} exited {done.returncode}:\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    return done


def start(cmd: List[str], cwd: Path, log: Path) -> subprocess.Popen:
    print(f"$ (cd {cwd} && {shlex.join(cmd)} &)  # output in {log}", flush=True)
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True,
                            env=CLEAN_ENV)
    started.append(proc)
    return proc


def wait_for(what: str, test: Callable[[], bool], timeout: float, proc: Optional[subprocess.Popen] = None,
             log: Optional[Path] = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if test():
            return
        if proc is not None and proc.poll() is not None:
            break
        time.sleep(0.5)
    tail = log.read_text()[-3000:] if log and log.exists() else ""
    raise CheckFailed(f"{what}: not within {timeout:.0f}s\n{tail}")


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


def stop(proc: subprocess.Popen, name: str, timeout: float = 60) -> None:
    """SIGINT to the main process only (systemd's KillMode=mixed, KillSignal=SIGINT): it stops its children."""
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


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_lines(path: Path) -> List[str]:
    return [line.strip() for line in path.read_text().splitlines() if line.strip() and not line.startswith("#")]


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def client_script(agent: str, question: str) -> str:
    # what an operator's script on the client host does: connect to the running broker, ask
    return f"""
import json, sys, time
from norfab.core.nfapi import NorFab
from norfab_hermes.routing import Hermes

with NorFab(inventory="inventory.yaml") as nf:
    deadline = time.monotonic() + 120
    while True:  # the worker registers with the broker a few seconds after it starts
        version = nf.client.run_job("hermes", "get_version", workers="all", timeout=10) or {{}}
        if "hermes-worker-1" in version or time.monotonic() > deadline:
            break
        time.sleep(1)
    reply = Hermes(nf.client).invoke({agent!r}, {question!r}, timeout=60)
    print(json.dumps({{"version": version, "invoke": reply}}, default=str))
"""


def check_client_side(work: Path, dist: Path, python: str) -> Path:
    step("client side: pip install norfab-hermes into an existing NorFab environment")
    env_dir = work / "client"
    run([python, "-m", "venv", str(env_dir)], work)
    pip_env = {"PIP_FIND_LINKS": " ".join(filter(None, [os.environ.get("PIP_FIND_LINKS"), str(dist)]))}
    run([str(env_dir / "bin/pip"), "install", NORFAB], work, pip_env, "client: pip install norfab[nfcli] (NorFab)",
        work / "client-norfab.log")
    done = run([str(env_dir / "bin/pip"), *CLIENT_INSTALL[1:]], work, pip_env, "client: pip install norfab-hermes",
               work / "client-pip.log")
    print("\n".join(line for line in done.stdout.splitlines() if not line.startswith("WARNING: Location")))
    run([str(env_dir / "bin/pip"), "check"], work)
    code = (
        "import importlib.util, sys\n"
        "import norfab_hermes.nfcli_shell, norfab_hermes.routing\n"
        "from norfab_hermes.nfcli_shell import HermesShell\n"
        "from norfab_hermes.routing import Hermes\n"
        f"present = [m for m in {HERMES_MODULES!r} if importlib.util.find_spec(m)]\n"
        "loaded = [m for m in sys.modules if m.startswith('norfab_hermes.worker')]\n"
        "assert not present and not loaded, (present, loaded)\n"
        "print('client side imports: HermesShell, Hermes; no Hermes, no worker code')\n"
    )
    print(run([str(env_dir / "bin/python"), "-c", code], work).stdout.strip())
    return env_dir


def check_worker_side(work: Path, dist: Path, python: str, uv: str) -> Path:
    step("worker side: the documented command in a dedicated environment")
    env_dir = work / "worker"
    run([uv, "venv", "--quiet", "--python", python, str(env_dir)], work)
    shutil.copy(REPO / "worker-overrides.txt", work / "worker-overrides.txt")
    env = {"VIRTUAL_ENV": str(env_dir), "UV_FIND_LINKS": str(dist)}
    run([uv, *WORKER_INSTALL[1:]], work, env, "worker: uv pip install --override ... norfab-hermes[worker]",
        work / "worker-uv.log")
    # the only mismatches left are hermes-agent's own pins of the overridden libraries
    found = run([uv, "pip", "check"], work, env, ok=False)
    overrides = dict(pin.split("==") for pin in requirement_lines(work / "worker-overrides.txt"))
    overrides = {canonical(name): version for name, version in overrides.items()}
    mismatches = re.findall(r"`(\S+)` requires `([^=`]+)==[^`]+`, but `([^`]+)` is installed", found.stdout + found.stderr)
    explained = {canonical(name): installed for package, name, installed in mismatches if package == "hermes-agent"}
    if explained != overrides or len(mismatches) != len(overrides):
        raise CheckFailed(f"uv pip check beyond the overrides:\n{found.stdout}{found.stderr}")
    print(f"uv pip check: only hermes-agent's own pins of {', '.join(sorted(overrides))}, overridden")
    return env_dir


def inventories(work: Path, broker_port: int, model_port: int) -> Dict[str, Path]:
    endpoint = f"tcp://127.0.0.1:{broker_port}"
    broker = work / "broker-host"
    write(broker / "inventory.yaml", f"""\
broker:
  endpoint: "{endpoint}"
topology:
  broker: true
  workers: []
workers:
  hermes-worker-1: [hermes/hermes-worker-1.yaml]
""")
    write(broker / "hermes/hermes-worker-1.yaml", f"""\
service: hermes
model:
  provider: custom
  base_url: http://127.0.0.1:{model_port}/v1
  default: scripted-model
agents:
  hello:
    description: Answers to prove the install
    instructions: Answer in one line.
""")
    return {"broker": broker, "worker": work / "worker-host", "client": work / "client-host", "endpoint": endpoint}


def remote_inventory(endpoint: str, key: str, workers: List[str]) -> str:
    """A host without the broker: where the broker is, its public key, and the workers this host starts."""
    text = f'broker:\n  endpoint: "{endpoint}"\n  shared_key: {key}\ntopology:\n  broker: false\n'
    text += f"  workers: {json.dumps(workers)}\n"
    # a worker's settings and agents come from the broker; `service` tells nfcli what to start
    if workers:
        text += "workers:\n" + "".join(f"  {name}:\n    - service: hermes\n" for name in workers)
    return text


SHELL_PLUGIN = """\
plugins:
  hermes:
    nfcli:
      mount_path: hermes
      shell_model: "norfab_hermes.nfcli_shell:HermesShell"
"""


def check_running(work: Path, client: Path, worker: Path) -> None:
    step("run: broker (client environment), scripted model and hermes worker (worker environment)")
    model_port, broker_port = free_port(), free_port()
    places = inventories(work, broker_port, model_port)
    broker_log = places["broker"] / "broker.out"
    broker = start([str(client / "bin/nfcli"), "-i", "inventory.yaml", "-b", "-w"], places["broker"], broker_log)
    key_file = places["broker"] / "__norfab__/files/broker/public_keys/broker.key"
    wait_for("broker key", key_file.exists, 60, broker, broker_log)
    shown = run([str(client / "bin/nfcli"), "--show-broker-shared-key"], places["broker"], ok=False)
    key = re.search(r"shared_key: (\S+)", shown.stdout + shown.stderr).group(1)

    model_log = work / "model.out"
    model = start([str(worker / "bin/python"), "-m", "norfab_hermes.testing.scripted_model", "--port",
                   str(model_port)], work, model_log)
    wait_for("scripted model", lambda: answers(f"http://127.0.0.1:{model_port}/v1/models"), 60, model, model_log)

    write(places["worker"] / "inventory.yaml", remote_inventory(places["endpoint"], key, ["hermes-worker-1"]))
    worker_log = places["worker"] / "worker.out"
    began = time.monotonic()
    hermes = start([str(worker / "bin/nfcli"), "-i", "inventory.yaml", "-w"], places["worker"], worker_log)
    worker_jsonl = places["worker"] / "__norfab__/logs/worker-hermes-worker-1.jsonl"
    wait_for("hermes worker start", lambda: worker_jsonl.exists() and "Started in" in worker_jsonl.read_text(),
             180, hermes, worker_log)
    timings["hermes worker: nfcli -w until started"] = time.monotonic() - began

    step("client host: get_version and invoke through the Python client")
    write(places["client"] / "inventory.yaml", remote_inventory(places["endpoint"], key, []) + SHELL_PLUGIN)
    question = "ping from the Python client"
    write(places["client"] / "ask.py", client_script("hello", question))
    began = time.monotonic()
    out = run([str(client / "bin/python"), "ask.py"], places["client"], timeout=300).stdout
    timings["client: get_version + invoke"] = time.monotonic() - began
    answer = json.loads(out.strip().splitlines()[-1])
    version = answer["version"]["hermes-worker-1"]["result"]
    result = answer["invoke"]["result"]
    print(f"get_version: {version}")
    print(f"invoke: {result['response']!r} stop_reason={result['stop_reason']} worker={result['worker']}")
    if version.get("hermes-agent") != "0.19.0" or version.get("norfab") != "0.25.0":
        raise CheckFailed(f"unexpected versions: {version}")
    if result["response"] != ANSWER.format(question) or result["stop_reason"] != "completed":
        raise CheckFailed(f"unexpected invoke result: {result}")

    step("client host: the nf# hermes commands (nfcli -c)")
    question = "ping from the nf# shell"
    lines = f'hermes agents\nhermes invoke hello "{question}"\nexit\n'
    print(f"$ printf {lines!r} | nfcli -i inventory.yaml -c")
    shell = subprocess.run([str(client / "bin/nfcli"), "-i", "inventory.yaml", "-c"], cwd=places["client"],
                           input=lines, capture_output=True, text=True, timeout=300)
    (places["client"] / "shell.out").write_text(shell.stdout + shell.stderr)
    for expected in ("hello", ANSWER.format(question), "completed | run "):
        if expected not in shell.stdout:
            raise CheckFailed(f"nf# shell output lacks {expected!r}:\n{shell.stdout[-3000:]}{shell.stderr[-2000:]}")
    print(f"nf# hermes invoke hello: {ANSWER.format(question)!r}")

    step("client environment cannot host a hermes worker, and says how to fix it")
    lonely = work / "client-only-worker"
    write(lonely / "inventory.yaml", remote_inventory(places["endpoint"], key, ["hermes-worker-1"])
          .replace("topology:\n", "topology:\n  workers_init_timeout: 5\n"))
    done = run([str(client / "bin/nfcli"), "-i", "inventory.yaml", "-w"], lonely, timeout=120, ok=False)
    wanted = "the hermes worker needs hermes-agent, jsonschema, not installed in this environment"
    if wanted not in done.stdout + done.stderr:
        raise CheckFailed(f"no clear error for a worker without the worker extra:\n{done.stderr[-3000:]}")
    print(next(line for line in done.stderr.splitlines() if wanted in line))

    step("stop: SIGINT to each main process, as the systemd units do")
    began = time.monotonic()
    stop(hermes, "hermes worker")
    timings["hermes worker: stop after SIGINT"] = time.monotonic() - began
    if "Hermes gateway stopped" not in worker_jsonl.read_text():
        raise CheckFailed("the hermes worker exited without stopping its gateway")
    stop(broker, "broker")
    model.terminate()
    model.wait(30)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--uv", default=shutil.which("uv") or "uv", help="uv executable")
    parser.add_argument("--python", default=sys.executable, help="Python for the new environments")
    parser.add_argument("--keep", action="store_true", help="keep the work folder (environments, logs)")
    args = parser.parse_args()
    args.uv = os.path.abspath(shutil.which(args.uv) or args.uv)  # the steps run in other folders
    work = Path(tempfile.mkdtemp(prefix="norfab-hermes-install-"))
    failed = False
    try:
        step(f"build (work folder {work})")
        dist = work / "dist"
        run([args.uv, "build", "--out-dir", str(dist)], REPO, timing="uv build (sdist, then wheel from it)")
        print("\n".join(sorted(p.name for p in dist.iterdir())))
        client = check_client_side(work, dist, args.python)
        worker = check_worker_side(work, dist, args.python, args.uv)
        check_running(work, client, worker)
    except (CheckFailed, subprocess.TimeoutExpired) as exc:
        print(f"\nINSTALL CHECK FAILED: {exc}", file=sys.stderr)
        failed = True
    except Exception:
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
