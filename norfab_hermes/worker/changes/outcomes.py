"""
Changes whose outcome nobody knows.

Before a change job is sent, a small marker naming it (job UUID, run,
session, tool, devices) is written under the instance root, and removed once
its reply is read. A marker still there at start means the worker stopped,
even by ``kill -9``, while the job was in flight: the change may or may not
have been made. It becomes an ``outcome_unknown`` record, as does a change
the tool stopped waiting for. Such a change is never sent again on its own;
its devices take no other change; ``get_run``, ``get_session`` and
``get_status`` show it until an operator checks the devices and
acknowledges it.
"""

import threading
from pathlib import Path
from typing import Dict, List, Optional

from ...errors import UnknownOutcome
from ...models import OutcomeUnknown, now_iso
from . import store

CRASHED = "the hermes worker stopped while the change job was in flight; it may or may not have run"


class Outcomes:
    """Markers of changes in flight and records of unknown outcomes, under ``folder``."""

    def __init__(self, folder: Path, worker_name: str) -> None:
        self.worker_name = worker_name
        self.in_flight = folder / "in_flight"
        self.path = folder / "outcome_unknown.json"
        self._lock = threading.Lock()
        self._records: Dict[str, OutcomeUnknown] = {
            item["outcome_id"]: OutcomeUnknown.model_validate(item) for item in store.load(self.path, [])
        }

    def begin(self, change: OutcomeUnknown) -> None:
        """Before the change job is sent: its marker, as it would read if the worker died now."""
        store.save(self.in_flight / f"{change.job_uuid}.json", change.model_dump())

    def end(self, job_uuid: str) -> None:
        """The change's reply was read: its outcome is known."""
        (self.in_flight / f"{job_uuid}.json").unlink(missing_ok=True)

    def unknown(self, change: OutcomeUnknown) -> None:
        """The tool stopped waiting for the change: nobody knows what it did."""
        with self._lock:
            self._records[change.outcome_id] = change
            self._save()
        self.end(change.job_uuid)

    def recover(self) -> List[OutcomeUnknown]:
        """At start: markers of changes that were in flight when the worker stopped become records."""
        found = []
        for marker in sorted(self.in_flight.glob("*.json")) if self.in_flight.exists() else []:
            data = store.load(marker, None)
            if data is not None:
                found.append(OutcomeUnknown.model_validate({**data, "reason": CRASHED}))
            marker.unlink(missing_ok=True)
        with self._lock:
            self._records.update({change.outcome_id: change for change in found})
            self._save()
        return found

    def pending(
        self, agent: Optional[str] = None, run_id: Optional[str] = None, session_id: Optional[str] = None
    ) -> List[OutcomeUnknown]:
        with self._lock:
            records = sorted(self._records.values(), key=lambda r: r.started)
        return [
            r
            for r in records
            if agent in (None, r.agent) and run_id in (None, r.run_id) and session_id in (None, r.session_id)
        ]

    def blocking(self, devices: List[str]) -> Optional[str]:
        """Why these devices take no change: an earlier change to one of them has an unknown outcome."""
        for record in self.pending():
            shared = sorted(set(record.devices) & set(devices))
            if shared:
                return (
                    f"device {shared[0]} has a change of unknown outcome (job {record.job_uuid}, run {record.run_id}): "
                    f"an operator must check it and acknowledge it (nf# hermes acknowledge {record.outcome_id})"
                )
        return None

    def acknowledge(self, outcome_id: str, by: Optional[str], note: Optional[str]) -> OutcomeUnknown:
        with self._lock:
            record = self._records.pop(outcome_id, None)
            if record is None:
                raise UnknownOutcome(
                    f"outcome '{outcome_id}' is not an unacknowledged change on worker '{self.worker_name}'"
                )
            self._save()
        return record.model_copy(update={"acknowledged": now_iso(), "acknowledged_by": by, "note": note})

    def _save(self) -> None:
        store.save(self.path, [record.model_dump() for record in self._records.values()])
