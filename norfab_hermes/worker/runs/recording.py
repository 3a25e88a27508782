"""
A worker's runs written to its records as they go: accepted, running, each
tool call, ended. The records room knows no ``Run``; this is where a run
becomes rows. A failed write is logged and the run goes on: the records
serve the operator, they never stop the network work they describe; but a
run that needs the fleet's record (one that may change devices, whose locks
are there) is refused when its first record cannot be written.
"""

import logging
from typing import Callable, List, Optional

from ...errors import RecordsUnavailable
from ...models import RunStateData
from ...safety.redact import scrub
from ..records.runs import RunRow
from ..records.store import Records, quietly
from .run import Run

log = logging.getLogger(__name__)


class RunRecorder:
    """
    Records the runs of one worker.

    Args:
        records: the worker's records.
        worker_name: for the records and messages.
        secrets: the worker's secrets, masked in what is written.
    """

    def __init__(self, records: Records, worker_name: str, secrets: Callable[[], List[str]] = lambda: []) -> None:
        self.records = records
        self.worker_name = worker_name
        self.secrets = secrets

    def started(self, run: Run) -> None:
        row = RunRow(
            run_id=run.run_id,
            agent=run.agent,
            worker=self.worker_name,
            started=run.started,
            instructions=scrub(run.instructions, self.secrets()),
            session_id=run.session_id,
            schedule_id=run.schedule_id,
            job_uuid=run.job_uuid,
            client=run.client,
            dedupe_key=run.dedupe_key,
            parent_run_id=run.lineage.parent_run_id if run.lineage else None,
            case_id=run.case_id,
            provenance=run.provenance,
        )
        try:
            self.records.run_started(row, run.needs_record)
        except RecordsUnavailable:  # the run needs the fleet's record: refused
            if run.needs_record:
                raise
            log.exception(f"{self.worker_name} - Could not write a run record")
        except Exception:
            log.exception(f"{self.worker_name} - Could not write a run record")

    def running(self, run: Run) -> None:
        quietly(self.worker_name, "a run record", self.records.run_running, run.run_id, run.session_id)

    def tool_call(self, run: Run) -> None:
        quietly(self.worker_name, "a run record", self.records.tool_call, run.agent, run.run_id, list(run.tool_calls))

    def ended(self, run: Run) -> None:
        quietly(
            self.worker_name, "a run record", self.records.run_ended, run.state_data(self.worker_name), run.finished
        )

    def state(self, run_id: str, offset: int) -> Optional[RunStateData]:
        """A run no longer in memory, from its record."""
        return self.records.run_state(run_id, offset)
