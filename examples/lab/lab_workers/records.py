"""
The lab's records worker: what an operations team keeps outside the network.

Customers (where they attach, their VRF and application), sites and their
uplinks, carrier circuits and the incident history: the data the operator
jobs start from. A real team has it in a source of truth and a ticketing
system (NetBox, ServiceNow, ...) and reaches it the same way: a NorFab
worker in front of it, whose read-only tasks an agent is given as tools.
Here it is one YAML file NorFab serves (``data`` in the worker inventory).

Tasks (service ``lab_records``): ``customer``, ``site``, ``circuit``,
``incidents``. Each answers text lines, ``field  value``, as a CLI would.
"""

import logging
from typing import Any, Dict

import yaml
from norfab.core.worker import Job, NFPWorker, Task
from norfab.models import Result
from pydantic import BaseModel, Field, StrictStr

SERVICE = "lab_records"
log = logging.getLogger(__name__)


class NameInput(BaseModel):
    name: StrictStr = Field(
        ..., min_length=1, max_length=64, description="Name or id, e.g. 'Customer A', 'site1', 'MET-44120'"
    )


class IncidentsInput(BaseModel):
    about: StrictStr = Field(
        ...,
        min_length=2,
        max_length=64,
        description="A circuit, device, site or customer the incidents mention, e.g. TLC-40917",
    )


def as_text(record: Dict[str, Any]) -> str:
    width = max(len(key) for key in record) + 2
    return "\n".join(f"{key:<{width}}{value}" for key, value in record.items())


class RecordsWorker(NFPWorker):
    """Read-only customer, site, circuit and incident records, from the file named by ``data``."""

    def __init__(
        self,
        inventory: Any,
        broker: str,
        worker_name: str,
        exit_event: Any = None,
        init_done_event: Any = None,
        log_level: str = "WARNING",
    ) -> None:
        super().__init__(inventory, broker, SERVICE, worker_name, exit_event, log_level)
        self.records: Dict[str, Any] = {}
        try:
            self.records = yaml.safe_load(self.fetch_file(self.load_inventory()["data"], raise_on_fail=True)) or {}
        except Exception as error:  # a broken data file must not hang NorFab's start
            log.error(f"{self.name} - Records not loaded: {error!r}")
        init_done_event.set()

    def lookup(self, kind: str, name: str) -> Result:
        table = self.records.get(kind) or {}
        key = next((k for k in table if k.lower() == name.strip().lower()), None)
        if key is None:
            known = ", ".join(table) or "none"
            return Result(failed=True, errors=[f"no {kind[:-1]} named '{name}'; known: {known}"])
        return Result(result=as_text(table[key]))

    @Task(input=NameInput, fastapi={"methods": ["POST"]})
    def customer(self, job: Job, name: str) -> Result:
        """A customer's record: VRF, site, where it attaches to the network, its application."""
        return self.lookup("customers", name)

    @Task(input=NameInput, fastapi={"methods": ["POST"]})
    def site(self, job: Job, name: str) -> Result:
        """A site's record: its device, uplink and status."""
        return self.lookup("sites", name)

    @Task(input=NameInput, fastapi={"methods": ["POST"]})
    def circuit(self, job: Job, name: str) -> Result:
        """A carrier circuit's record: carrier, ends and what it carries."""
        return self.lookup("circuits", name)

    @Task(input=IncidentsInput, fastapi={"methods": ["POST"]})
    def incidents(self, job: Job, about: str) -> Result:
        """Incidents that mention a circuit, device, site or customer, oldest first."""
        found = [line for line in self.records.get("incidents") or [] if about.strip().lower() in line.lower()]
        return Result(result="\n".join(found) or f"no incidents mention '{about}'")
