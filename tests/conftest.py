"""
Shared fixtures: a real NorFab (broker, workers) built in a temporary
directory, and the package's scripted model. Only the model is scripted.
"""

import socket
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional

import pytest
import yaml
from norfab.core.nfapi import NorFab

from norfab_hermes.scripted_model import ScriptedModelServer


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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


def write_inventory(base: Path, workers: Dict[str, dict], files: Optional[Dict[str, Any]] = None) -> Path:
    """A NorFab inventory with one inline definition per worker; files go under base."""
    for path, content in (files or {}).items():
        target = base / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content if isinstance(content, str) else yaml.safe_dump(content))
    topology = []
    for name, data in workers.items():
        depends = data.pop("depends_on", None)
        topology.append({name: {"depends_on": depends}} if depends else name)
    inventory = {
        "broker": {"endpoint": f"tcp://127.0.0.1:{free_port()}"},
        "logging": {"handlers": {"terminal": {"level": "CRITICAL"}, "file": {"level": "INFO"}}},
        "topology": {"broker": True, "workers_init_timeout": 120, "workers": topology},
        "workers": {name: [data] for name, data in workers.items()},
    }
    path = base / "inventory.yaml"
    path.write_text(yaml.safe_dump(inventory, sort_keys=False))
    return path


@contextmanager
def norfab(base: Path, workers: Dict[str, dict], files: Optional[Dict[str, Any]] = None) -> Iterator[Any]:
    """Start a real NorFab from inline worker inventories; yields the NorFab object."""
    names = list(workers)
    nf = NorFab(inventory=str(write_inventory(base, workers, files)))
    nf.start()
    try:
        assert not nf.exiting, "NorFab failed to start, see __norfab__/logs"
        nf.client = nf.make_client()
        wait_for_workers(nf.client, names)
        yield nf
    finally:
        nf.destroy()


def hermes_worker(url: str, agents: Dict[str, Any], **settings: Any) -> dict:
    """Inline inventory of a hermes worker whose agents use the scripted model at ``url``."""
    return {
        "service": "hermes",
        "model": {"provider": "custom", "base_url": url, "context_length": 131072},
        "agents": agents,
        **settings,
    }


@pytest.fixture(scope="module")
def model() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer(model_ids=["alpha-model", "beta-model", "scripted-model"]) as server:
        yield server


def run(client: Any, task: str, worker: str = "any", job_timeout: float = 60, **kwargs: Any) -> Dict[str, Any]:
    """run_job on the hermes service; returns the single worker's Result dict."""
    reply = client.run_job("hermes", task, kwargs=kwargs, workers=worker, timeout=job_timeout)
    assert reply, f"hermes {task} was not accepted by the broker"
    assert len(reply) == 1, reply
    return next(iter(reply.values()))


def start_invoke(client: Any, worker: str, **kwargs: Any) -> tuple:
    """Submit an invoke and wait for its first event; returns (future, run_id)."""
    future = client.submit_job("hermes", "invoke", kwargs=kwargs, workers=worker, timeout=120)
    for event in future.events(timeout=60):
        run_id = (event.get("extras") or {}).get("run_id")
        if run_id:
            return future, run_id
    raise AssertionError(f"invoke {kwargs} emitted no run id: {future.result(timeout=5)}")


def result_of(future: Any, worker: str, timeout: float = 60) -> Dict[str, Any]:
    reply = future.result(timeout=timeout)
    assert reply and worker in reply, reply
    return reply[worker]


def network(hosts: List[str]) -> tuple:
    """A FakeNOS network of cisco_ios devices on 127.0.0.1 behind a nornir worker.

    Returns (worker inventories, files) for :func:`norfab`; the hermes worker
    that uses it should list ``depends_on: [nornir-worker-1]``.
    """
    devices = {
        name: {"username": "nornir", "password": "nornir", "platform": "cisco_ios", "port": free_port()}
        for name in hosts
    }
    workers = {
        "fakenos-worker-1": {
            "service": "fakenos",
            "networks": {"lab": {"inventory": "nf://fakenos/lab.yaml", "auto_start": True}},
        },
        "nornir-worker-1": {
            "service": "nornir",
            "depends_on": ["fakenos-worker-1"],
            "runner": {"plugin": "RetryRunner", "options": {"num_workers": 10, "num_connectors": 5}},
            "hosts": {
                name: {"hostname": "127.0.0.1", "port": d["port"], "platform": "cisco_ios", "username": "nornir", "password": "nornir"}
                for name, d in devices.items()
            },
        },
    }
    return workers, {"fakenos/lab.yaml": {"hosts": devices}}


def lab_workers(url: str) -> Dict[str, dict]:
    """Two hermes workers sharing the agent name 'interfaces': hermes-lab-1 (interfaces, routing), hermes-lab-2 (interfaces, bgp)."""

    def agents(*names: str) -> Dict[str, dict]:
        return {name: {"instructions": f"You are the {name} agent."} for name in names}

    return {
        "hermes-lab-1": hermes_worker(url, agents("interfaces", "routing")),
        "hermes-lab-2": hermes_worker(url, agents("interfaces", "bgp")),
    }


def last_job(client: Any, task: str) -> Dict[str, Any]:
    """The newest hermes job of ``task`` in the client's job store: what was sent, to which workers."""
    jobs = client.job_db.fetch_jobs(service="hermes", task=task, last=1)
    assert jobs, f"no hermes {task} job was sent"
    return jobs[0]
