"""
The lab an eval runs on: a copy of the lab folder, started as NorFab.

The copy lives in a folder of its own, so every eval starts with no earlier
sessions or memory, and gets free ports (the broker's and the devices'), so
it runs beside a lab that is already up (``make shell``, another eval). Its
topology is the lab's ``eval/lab.yaml``: the workers the jobs need, started
next to the broker.

Agents use the scripted model unless ``NORFAB_HERMES_BASE_URL`` names a real
provider (the same ``NORFAB_HERMES_*`` variables as the demo).
"""

import json
import os
import shutil
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional

import yaml

from ..testing.embedded import free_port, started
from ..testing.scripted_model import ScriptedModel, ScriptedModelServer
from .models import LabSettings

SETTINGS = Path("eval") / "lab.yaml"
SCRIPTED_MODEL = "scripted-model"
LOGS = Path("__norfab__") / "logs"  # NorFab's JSON lines logs, one file per broker and worker
WORTH_TELLING = {"WARNING", "ERROR", "CRITICAL"}


def settings(lab: Path) -> LabSettings:
    path = Path(lab) / SETTINGS
    if not path.is_file():
        raise ValueError(f"{path} not found: a lab for the eval needs eval/lab.yaml (topology, reset)")
    return LabSettings(**(yaml.safe_load(path.read_text()) or {}))


def copy_lab(source: Path, folder: Path, lab: LabSettings) -> Path:
    """The lab in ``folder``: its own broker port and device ports, the eval's topology; returns the inventory."""
    shutil.copytree(source, folder, ignore=shutil.ignore_patterns("__norfab__", "*.out", "__pycache__"))
    inventory_path = folder / "inventory.yaml"
    inventory = yaml.safe_load(inventory_path.read_text())
    inventory["broker"]["endpoint"] = f"tcp://127.0.0.1:{free_port()}"
    inventory["topology"]["workers"] = lab.topology
    inventory_path.write_text(yaml.safe_dump(inventory, sort_keys=False))
    if lab.devices:
        _new_device_ports(folder / lab.devices.fakenos, folder / lab.devices.nornir)
    return inventory_path


def _new_device_ports(fakenos: Path, nornir: Path) -> None:
    """A free port for every FakeNOS device, in the FakeNOS inventory and the nornir hosts alike."""
    devices = yaml.safe_load(fakenos.read_text())
    hosts = yaml.safe_load(nornir.read_text())
    for name, device in devices["hosts"].items():
        device["port"] = free_port()
        if name in (hosts.get("hosts") or {}):
            hosts["hosts"][name]["port"] = device["port"]
    fakenos.write_text(yaml.safe_dump(devices, sort_keys=False))
    nornir.write_text(yaml.safe_dump(hosts, sort_keys=False))


def provider() -> Optional[str]:
    """The real provider's model id, when the NORFAB_HERMES_* variables name one."""
    if not os.environ.get("NORFAB_HERMES_BASE_URL"):
        return None
    return os.environ.get("NORFAB_HERMES_MODEL") or "(the provider's default model)"


@contextmanager
def scripted_model() -> Iterator[ScriptedModel]:
    """The scripted model, with the lab's agents pointed at it while it runs."""
    model = ScriptedModel()
    server = ScriptedModelServer(model, port=free_port(), model_ids=[SCRIPTED_MODEL])
    saved: Dict[str, Optional[str]] = {k: os.environ.get(k) for k in ("NORFAB_HERMES_BASE_URL", "NORFAB_HERMES_MODEL")}
    os.environ.update(NORFAB_HERMES_BASE_URL=server.start(), NORFAB_HERMES_MODEL=SCRIPTED_MODEL)
    try:
        yield model
    finally:
        server.stop()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@contextmanager
def running_lab(source: Path, folder: Path) -> Iterator[Any]:
    """NorFab on a copy of the lab at ``source`` made in ``folder``; yields it with ``nf.client``."""
    lab = settings(source)
    with started(copy_lab(Path(source), Path(folder), lab), lab.workers()) as nf:
        yield nf


def lab_warnings(folder: Path, until: datetime, last: int = 20) -> List[str]:
    """The newest ``last`` warnings and errors the lab in ``folder`` logged before ``until``, oldest first.

    A run that ended without an answer is often explained there (a worker the broker lost, a job a
    worker did not know), and a CI log shows only the end of what the eval printed. ``until`` is
    when the runs ended: the lab's stopping logs its own warnings.
    """
    entries = []
    for path in sorted((folder / LOGS).glob("*.jsonl")):
        for line in path.read_text(errors="replace").splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if isinstance(entry, dict) and entry.get("level") in WORTH_TELLING and logged(entry) < until:
                entries.append(entry)
    entries.sort(key=logged)
    return [
        f"{entry.get('ts')} {entry.get('level')} {entry.get('name') or entry.get('logger')}: "
        f"{' '.join(str(entry.get('message')).split())[:300]}"
        for entry in entries[-last:]
    ]


def logged(entry: Dict[str, Any]) -> datetime:
    """When a log entry was written (its ``ts``, UTC unless it names a zone); an entry without one sorts first."""
    try:
        when = datetime.fromisoformat(str(entry.get("ts")))
    except ValueError:
        when = datetime.min
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)
