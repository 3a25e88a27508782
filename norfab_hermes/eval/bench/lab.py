"""
The benchmark's lab: a NorFab inventory for a generated network, written to a folder, started once per size.

The folder holds the broker's inventory, a FakeNOS device per node (every
device on one Python model, ``fakenos/nos/bench.py``, answering from the
state folder), the nornir hosts, the records the operations team keeps
(served by the example lab's records worker) and one hermes worker with the
``bench`` agent. The state folder (the network and the current scenario,
that is the ground truth) is outside the lab folder: NorFab's file sharing
serves the lab folder, and no agent tool reads files.
"""

import os
import shutil
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Dict, Iterator, List

import yaml

from ...testing.embedded import free_port, started
from ..models import BenchScenario, Network
from .device import NETWORK_FILE, SCENARIO_FILE

RECORDS_WORKER = Path(__file__).resolve().parents[3] / "examples" / "lab" / "lab_workers"
AGENT = "bench"
WORKER = "hermes-worker-1"
WORKERS = ["fakenos-worker-1", "nornir-worker-1", "records-worker-1", WORKER]

INSTRUCTIONS = """\
You are the network operations agent. Find out whether anything is wrong in
the network, from real data through your tools, and never guess. The network
has two cores, distribution routers and sites; every device has a spare port
shut by design. Sweep tools take FB, a device name or a glob ("*" for every
device), or FL, a list of device names.

If you find a fault, name the one device and the one interface where it is
(not the devices that only suffer from it), its kind, every device that shows
it, and quote the lines that prove it. If nothing is wrong, say so."""


def _sweep(description: str, *commands: str) -> Dict[str, Any]:
    return {
        "description": f"{description} ({'; '.join(commands)}), on the devices named",
        "input_schema": {
            "type": "object",
            "properties": {
                "FB": {"type": "string", "pattern": "^[A-Za-z0-9_.*-]+$", "description": "device name or glob"},
                "FL": {"type": "array", "items": {"type": "string", "pattern": "^[A-Za-z0-9_.-]+$"}},
            },
        },
        "norfab": {"service": "nornir", "task": "cli", "workers": "all", "kwargs": {"commands": list(commands)}},
    }


def _per_port(description: str, command: str) -> Dict[str, Any]:
    return {
        "description": f"{description} ({command.replace('{{ job_data.interface }}', 'NAME')})",
        "input_schema": {
            "type": "object",
            "properties": {
                "FB": {"type": "string", "pattern": "^[A-Za-z0-9_.-]+$", "description": "device name"},
                "interface": {"type": "string", "pattern": "^[A-Za-z-]+[0-9/.:]+$", "description": "full name"},
            },
            "required": ["FB", "interface"],
        },
        "norfab": {
            "service": "nornir",
            "task": "cli",
            "workers": "all",
            "kwargs": {"commands": [command]},
            "job_data": ["interface"],
        },
    }


def _record(description: str, task: str) -> Dict[str, Any]:
    return {
        "description": description,
        "input_schema": {
            "type": "object",
            "properties": {"name": {"type": "string", "pattern": "^[A-Za-z0-9 _.-]{1,64}$"}},
            "required": ["name"],
        },
        "norfab": {"service": "lab_records", "task": task, "workers": "all"},
    }


TOOLS = {
    "health": _sweep(
        "The log, every interface's status and every port's error counters at once",
        "show logging",
        "show interfaces description",
        "show interfaces counters errors",
    ),
    "device_log": _sweep("Device log messages", "show logging"),
    "interfaces": _sweep("Every interface's status and description", "show interfaces description"),
    "ip_interfaces": _sweep("Every interface's address and status", "show ip interface brief"),
    "error_counters": _sweep("Error counters of every port", "show interfaces counters errors"),
    "optics_all": _sweep("Receive light of every optic", "show interfaces transceiver"),
    "ospf_neighbors": _sweep("OSPF neighbors", "show ip ospf neighbor"),
    "ospf_interfaces": _sweep("OSPF interfaces, areas and neighbor counts", "show ip ospf interface brief"),
    "bgp_summary": _sweep("BGP peers and their state", "show ip bgp summary"),
    "access_lists": _sweep("Access lists with match counts", "show ip access-lists"),
    "static_routes": _sweep("Static routes", "show ip route static"),
    "trunks": _sweep("Trunk ports and their allowed VLANs", "show interfaces trunk"),
    "interface_detail": _per_port("One interface: state, MTU, errors", "show interfaces {{ job_data.interface }}"),
    "optics": _per_port("One optic's light", "show interfaces {{ job_data.interface }} transceiver"),
    "ospf_interface": _per_port("One OSPF interface: area, timers", "show ip ospf interface {{ job_data.interface }}"),
    "site_record": _record("A site's record: device, uplink, VLAN, customer prefix, access list", "site"),
    "customer_record": _record("A customer's record: site, attachment, application", "customer"),
}


def agent_definition(max_targets: int) -> Dict[str, Any]:
    return {
        "description": "Finds whether a fault is anywhere in the network, where, and of what kind",
        "instructions": INSTRUCTIONS,
        "toolsets": ["norfab"],
        "run_timeout": 240,
        "max_tool_calls": 60,
        "max_targets": max_targets,
        "hermes": {"agent": {"max_turns": 40}},
        "tools": TOOLS,
    }


def model_settings() -> Dict[str, Any]:
    """The agents' model, from the NORFAB_HERMES_* variables (the scripted model's when they name none).

    The API key stays in the environment: only the name of its variable is written.
    """
    model = {
        "provider": os.environ.get("NORFAB_HERMES_PROVIDER", "custom"),
        "base_url": os.environ.get("NORFAB_HERMES_BASE_URL", "http://127.0.0.1:8400/v1"),
        "default": os.environ.get("NORFAB_HERMES_MODEL", "scripted-model"),
        "context_length": 131072,
    }
    if os.environ.get("NORFAB_HERMES_API_KEY_ENV"):
        model["api_key_env"] = os.environ["NORFAB_HERMES_API_KEY_ENV"]
    return model


def _ports(count: int) -> List[int]:
    """``count`` distinct free ports: free_port alone may hand out one twice."""
    ports: List[int] = []
    while len(ports) < count:
        port = free_port()
        if port not in ports:
            ports.append(port)
    return ports


def write_lab(network: Network, folder: Path, state: Path) -> Path:
    """The lab of ``network`` in ``folder``, its devices answering from ``state``; returns the inventory."""
    folder, state = Path(folder).resolve(), Path(state).resolve()
    state.mkdir(parents=True, exist_ok=True)
    (state / NETWORK_FILE).write_text(network.model_dump_json())
    shutil.copytree(RECORDS_WORKER, folder / "lab_workers", ignore=shutil.ignore_patterns("__pycache__"))
    ports = dict(zip([n.name for n in network.nodes], _ports(len(network.nodes))))
    login = {"username": "nornir", "password": "nornir"}
    files: Dict[str, Any] = {
        "fakenos/lab.yaml": {
            "hosts": {name: {**login, "port": port, "nos": {"plugin": "bench_device"}} for name, port in ports.items()}
        },
        "fakenos/nos/bench.py": (
            '"""Every device of the benchmark lab: norfab_hermes.eval.bench.device, answering from the state folder."""\n\n'
            "from norfab_hermes.eval.bench.device import device_model\n\n"
            f"globals().update(device_model({str(state)!r}))\n"
        ),
        "records/data.yaml": network.records,
        f"agents/{AGENT}.yaml": agent_definition(len(network.nodes) + 5),
    }
    for relative, content in files.items():
        target = folder / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content if isinstance(content, str) else yaml.safe_dump(content, sort_keys=False))
    workers = {
        "fakenos-worker-1": {
            "service": "lab_fakenos",
            "networks": {"bench": {"inventory": "nf://fakenos/lab.yaml", "auto_start": True}},
            "nos_plugins": {"bench_device": "nf://fakenos/nos/bench.py"},
        },
        "nornir-worker-1": {
            "service": "nornir",
            # the sweeps reach every device at once: one connection each, kept between jobs
            "runner": {"plugin": "RetryRunner", "options": {"num_workers": 40, "num_connectors": 20, "task_retry": 1}},
            "defaults": {"hostname": "127.0.0.1", "platform": "cisco_ios", **login},
            "hosts": {name: {"port": port} for name, port in ports.items()},
        },
        "records-worker-1": {"service": "lab_records", "data": "nf://records/data.yaml"},
        WORKER: {
            "service": "hermes",
            "model": model_settings(),
            "read_only_tasks": {"lab_records": ["customer", "site", "circuit", "incidents"]},
            "tool_result_max_chars": 200000,
            # a file of its own: NorFab renders inventory files as Jinja2, the tools' commands are templates
            "agents": {AGENT: {"from_yaml_file": f"nf://agents/{AGENT}.yaml"}},
        },
    }
    inventory = {
        "broker": {"endpoint": f"tcp://127.0.0.1:{free_port()}"},
        "logging": {"handlers": {"terminal": {"level": "CRITICAL"}, "file": {"level": "INFO"}}},
        "plugins": {
            "lab_fakenos": {"worker": "norfab_hermes.testing.fakenos:LabFakeNOSWorker"},
            "lab_records": {"worker": "lab_workers.records:RecordsWorker"},
        },
        "topology": {
            "broker": True,
            "workers_init_timeout": 180,
            "workers": [
                # its devices and models are fetched at start: once NorFab's own file sharing worker is up
                {"fakenos-worker-1": {"depends_on": ["filesharing-worker-1"]}},
                {"nornir-worker-1": {"depends_on": ["fakenos-worker-1"]}},
                # its records file is fetched at start: once FakeNOS fetched its own, file sharing answers
                {"records-worker-1": {"depends_on": ["fakenos-worker-1"]}},
                {WORKER: {"depends_on": ["nornir-worker-1", "records-worker-1"]}},
            ],
        },
        "workers": {name: [f"workers/{name}.yaml"] for name in workers},
    }
    for name, data in workers.items():
        text = yaml.safe_dump(data, sort_keys=False)
        (folder / "workers").mkdir(exist_ok=True)
        (folder / "workers" / f"{name}.yaml").write_text(text)
    path = folder / "inventory.yaml"
    path.write_text(yaml.safe_dump(inventory, sort_keys=False))
    return path


def inject(state: Path, scenario: BenchScenario) -> None:
    """Put ``scenario`` on the running lab: every device answers from it from now on."""
    path = Path(state) / SCENARIO_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    staged = path.with_suffix(".new")
    staged.write_text(scenario.model_dump_json())
    staged.replace(path)  # atomic: a device never reads half a scenario


@contextmanager
def running(network: Network, folder: Path, state: Path) -> Iterator[Any]:
    """NorFab on the lab of ``network``; yields it with ``nf.client``."""
    with started(write_lab(network, folder, state), WORKERS) as nf:
        yield nf
