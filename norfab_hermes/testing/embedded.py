"""
An embedded NorFab: broker and workers started in this process from an
inventory, for the demo, tests and benchmarks.

``running_norfab`` builds an inventory from inline worker definitions in a
directory of its own; ``started`` runs any inventory file. Both wait until
every worker has registered with the broker (NorFab's ``start()`` returns
before that) and always destroy NorFab on the way out. ``worker_process``
and ``remote_worker`` run one worker as an OS process of its own, the way
an operator starts it on the same or on another host.
"""

import os
import random
import signal
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Tuple

import yaml
from norfab.core.nfapi import NorFab

# worker plugins of this package an inline inventory may use, by service
PYTHON_FAKENOS = "lab_fakenos"
# NorFab starts its own file sharing worker first, the next one half a second later: FakeNOS, fetching its
# devices in its init, could ask before file sharing had registered; the fetch failed, its init raised, its
# process stayed up, and NorFab's start() waited for it forever (a suite hung at 15 minutes)
FILE_SHARING = "filesharing-worker-1"
PACKAGE_WORKERS = {PYTHON_FAKENOS: "norfab_hermes.testing.fakenos:LabFakeNOSWorker"}
LISTEN_PORTS = (20000, 32768)  # Linux hands out 32768-60999 to outgoing connections


def free_port(address: str = "127.0.0.1") -> int:
    """A port nothing listens on, below the ephemeral range: a port the kernel hands out for bind(0)
    is handed to outgoing connections too (SSH, ZeroMQ, HTTP), and one of them could take it before
    FakeNOS or the broker binds it; ports here are taken only by listeners that chose them."""
    for _ in range(200):
        port = random.randrange(*LISTEN_PORTS)
        with socket.socket() as s:
            try:
                s.bind((address, port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in {LISTEN_PORTS} on {address}")


def most_at_once(spans: List[Tuple[float, float]]) -> int:
    """The most of the (start, end) spans open at one moment: runs in flight at once, read from their records."""
    edges = sorted([(start, 1) for start, _ in spans] + [(end, -1) for _, end in spans])
    most = now = 0
    for _, step in edges:
        now += step
        most = max(most, now)
    return most


def wait_for_workers(client: Any, names: List[str], timeout: float = 60) -> None:
    """NorFab's start() returns before workers registered with the broker."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        reply = client.mmi("mmi.service.broker", "show_workers") or {}
        alive = {w["name"] for w in reply.get("results") or [] if w.get("status") == "alive"}
        if set(names) <= alive:
            return
        time.sleep(0.2)
    raise TimeoutError(f"workers {names} did not register; alive: {sorted(alive)}")


def write_inventory(
    base: Path,
    workers: Dict[str, dict],
    files: Optional[Dict[str, Any]] = None,
    separate: Tuple[str, ...] = (),
    address: str = "127.0.0.1",
) -> Path:
    """A NorFab inventory with one inline definition per worker; files go under base.

    Workers named in ``separate`` are defined but left out of the topology:
    they run as processes of their own (:func:`worker_process`,
    :func:`remote_worker`). The broker listens on ``address``. A worker of a
    service in ``PACKAGE_WORKERS`` is this package's own worker plugin.
    """
    for relative, content in (files or {}).items():
        target = base / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content if isinstance(content, str) else yaml.safe_dump(content))
    topology = []
    for name, data in workers.items():
        depends = data.pop("depends_on", None)
        if name not in separate:
            topology.append({name: {"depends_on": depends}} if depends else name)
    services = {data.get("service") for data in workers.values()}
    inventory = {
        "broker": {"endpoint": f"tcp://{address}:{free_port(address)}"},
        "logging": {"handlers": {"terminal": {"level": "CRITICAL"}, "file": {"level": "INFO"}}},
        "topology": {"broker": True, "workers_init_timeout": 120, "workers": topology},
        "workers": {name: [data] for name, data in workers.items()},
        "plugins": {service: {"worker": path} for service, path in PACKAGE_WORKERS.items() if service in services},
    }
    path = base / "inventory.yaml"
    path.write_text(yaml.safe_dump(inventory, sort_keys=False))
    return path


@contextmanager
def started(inventory: Path, workers: List[str]) -> Iterator[Any]:
    """Start NorFab from an inventory file; yields it with ``nf.client`` ready."""
    nf = NorFab(inventory=str(inventory))
    nf.start()
    try:
        if nf.exiting:
            raise RuntimeError(f"NorFab failed to start; see {Path(inventory).parent}/__norfab__/logs")
        nf.client = nf.make_client()
        wait_for_workers(nf.client, workers)
        yield nf
    finally:
        nf.destroy()


@contextmanager
def running_norfab(
    base: Path,
    workers: Dict[str, dict],
    files: Optional[Dict[str, Any]] = None,
    separate: Tuple[str, ...] = (),
    address: str = "127.0.0.1",
) -> Iterator[Any]:
    """Start NorFab from inline worker inventories written under ``base``; ``separate`` workers are not started."""
    names = [name for name in workers if name not in separate]
    with started(write_inventory(base, workers, files, separate, address), names) as nf:
        yield nf


def wait_until_gone(client: Any, name: str, timeout: float = 60) -> None:
    """Until the broker no longer lists ``name`` as alive (a killed worker lingers until its keepalives expire)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        reply = client.mmi("mmi.service.broker", "show_workers") or {}
        if not any(w["name"] == name and w.get("status") == "alive" for w in reply.get("results") or []):
            return
        time.sleep(0.5)
    raise TimeoutError(f"worker {name} still registered as alive after {timeout:.0f}s")


@contextmanager
def worker_process(nf: Any, name: str, timeout: float = 90) -> Iterator[subprocess.Popen]:
    """Run worker ``name`` of ``nf``'s inventory as its own OS process, the way an operator
    starts a worker next to the broker (``nfcli -i inventory.yaml -w -wl NAME``)."""
    inventory = Path(nf.inventory_path).resolve()
    with _nfcli(nf.client, name, ["-i", str(inventory), "-w", "-wl", name], inventory.parent, timeout) as process:
        yield process


def broker_shared_key(base: Path) -> str:
    """The broker's public key under ``base``: what ``nfcli --show-broker-shared-key`` prints."""
    text = (Path(base) / "__norfab__" / "files" / "broker" / "public_keys" / "broker.key").read_text()
    return next(line.split("=", 1)[1].strip().strip('"') for line in text.splitlines() if "public-key" in line)


def write_worker_inventory(folder: Path, name: str, endpoint: str, shared_key: str) -> Path:
    """A worker-only inventory, as on a host of its own: the broker's endpoint and public key.

    The worker still reads its service settings from the broker's inventory,
    which must define it (left out of the broker's topology).
    """
    folder.mkdir(parents=True, exist_ok=True)
    inventory = {
        # NorFab reads the file as a Jinja2 template: a key holding "{%" (Z85 has both) broke it, now and then
        "broker": {"endpoint": endpoint, "shared_key": "{% raw %}" + shared_key + "{% endraw %}"},
        "logging": {"handlers": {"terminal": {"level": "CRITICAL"}, "file": {"level": "INFO"}}},
        "topology": {"broker": False, "workers": [name]},
        "workers": {name: [{"service": "hermes"}]},
    }
    path = folder / "inventory.yaml"
    path.write_text(yaml.safe_dump(inventory, sort_keys=False))
    return path


@contextmanager
def remote_worker(
    nf: Any, name: str, folder: Path, endpoint: Optional[str] = None, prefix: Tuple[str, ...] = (), timeout: float = 90
) -> Iterator[subprocess.Popen]:
    """Run worker ``name`` the way it runs on another host: a folder of its own holding
    a worker-only inventory, started with ``nfcli -i inventory.yaml -w`` in that folder.

    A folder without an ``inventory.yaml`` gets one (:func:`write_worker_inventory`);
    one that has it keeps it, and reads the broker from ``NORFAB_BROKER_ENDPOINT``
    and ``NORFAB_BROKER_SHARED_KEY``, set here. ``endpoint`` is the broker as that
    host reaches it (default: the broker's own); ``prefix`` runs the command inside
    something, e.g. ``ip netns exec NS``. Its ``__norfab__`` (keys, job store,
    Hermes home) stays in ``folder``, so starting it again there brings back its
    agents and sessions.
    """
    folder = Path(folder)
    endpoint = endpoint or nf.inventory.broker["endpoint"]
    key = broker_shared_key(Path(nf.inventory_path).resolve().parent)
    if not (folder / "inventory.yaml").exists():
        write_worker_inventory(folder, name, endpoint, key)
    env = {**os.environ, "NORFAB_BROKER_ENDPOINT": endpoint, "NORFAB_BROKER_SHARED_KEY": key}
    with _nfcli(nf.client, name, ["-i", "inventory.yaml", "-w"], folder, timeout, prefix, env) as process:
        yield process


@contextmanager
def _nfcli(
    client: Any,
    name: str,
    arguments: List[str],
    cwd: Path,
    timeout: float,
    prefix: Tuple[str, ...] = (),
    env: Optional[Dict[str, str]] = None,
) -> Iterator[subprocess.Popen]:
    """``nfcli ARGUMENTS`` in ``cwd`` until worker ``name`` registered; stopped on the way out
    as an operator stops it (Ctrl+C), killed if it does not stop."""
    wait_until_gone(client, name)
    nfcli = Path(sys.executable).with_name("nfcli")
    log = open(cwd / f"{name}.out", "ab")
    process = subprocess.Popen(
        [*prefix, str(nfcli), *arguments],
        cwd=cwd,
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
        start_new_session=True,  # its own process group: kill(-pgid) takes the worker child too
    )
    try:
        wait_for_workers(client, [name], timeout)
        yield process
    finally:
        kill_process_group(process, signal.SIGINT)
        log.close()


def kill_process_group(process: subprocess.Popen, sig: int = signal.SIGKILL, grace: float = 30) -> None:
    """Signal a process started by :func:`worker_process` and everything it started; SIGKILL after ``grace`` s."""
    for signal_now in (sig, signal.SIGKILL):
        try:
            os.killpg(process.pid, signal_now)
        except ProcessLookupError:
            return
        try:
            process.wait(grace)
            return
        except subprocess.TimeoutExpired:
            continue


def hermes_worker(url: str, agents: Dict[str, Any], **settings: Any) -> dict:
    """Inline inventory of a hermes worker whose agents use the scripted model at ``url``."""
    return {
        "service": "hermes",
        "model": {"provider": "custom", "base_url": url, "context_length": 131072},
        "agents": agents,
        **settings,
    }


def network(
    hosts: List[str], models: Optional[Dict[str, dict]] = None, users: Optional[Dict[str, dict]] = None
) -> tuple:
    """A FakeNOS network of cisco_ios devices on 127.0.0.1 behind a nornir worker.

    ``models`` gives some hosts a FakeNOS device model of their own: ``name``
    and ``initial_prompt`` and ``commands``, or ``name`` and ``python``, the
    source of a Python device model whose ``NAME`` is that name (for devices
    whose output changes, e.g. after a configuration change). ``users`` are
    the hermes worker inventories, by worker name, whose agents call the
    network: they start after its nornir worker. Returns (worker
    inventories, files) for :func:`running_norfab`.
    """
    models = models or {}
    devices = {
        name: {"username": "nornir", "password": "nornir", "platform": "cisco_ios", "port": free_port()}
        for name in hosts
    }
    files: Dict[str, Any] = {}
    plugins: Dict[str, str] = {}
    for name, model in models.items():
        devices[name]["nos"] = {"plugin": model["name"]}
        path = f"fakenos/nos/{name}.{'py' if 'python' in model else 'yaml'}"
        files[path] = model.get("python", model)
        plugins[model["name"]] = f"nf://{path}"
    python = any("python" in model for model in models.values())
    workers = {
        "fakenos-worker-1": {
            # NorFab's FakeNOS worker loads YAML models only
            "service": PYTHON_FAKENOS if python else "fakenos",
            "depends_on": [FILE_SHARING],
            "networks": {"lab": {"inventory": "nf://fakenos/lab.yaml", "auto_start": True}},
            "nos_plugins": plugins,
        },
        "nornir-worker-1": {
            "service": "nornir",
            "depends_on": ["fakenos-worker-1"],
            "runner": {"plugin": "RetryRunner", "options": {"num_workers": 10, "num_connectors": 5}},
            "hosts": {
                name: {
                    "hostname": "127.0.0.1",
                    "port": d["port"],
                    "platform": "cisco_ios",
                    "username": "nornir",
                    "password": "nornir",
                }
                for name, d in devices.items()
            },
        },
    }
    for name, inventory in (users or {}).items():
        workers[name] = {**inventory, "depends_on": ["nornir-worker-1"]}
    return workers, {"fakenos/lab.yaml": {"hosts": devices}, **files}
