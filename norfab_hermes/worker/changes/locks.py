"""
One change per device at a time, across the runs and agents of one worker,
and with the PostgreSQL record across the workers of the fleet.

A change takes the locks of every device it names, all or none, before its
preview and keeps them until it is verified (or rolled back), so no other
change touches those devices in between. A change that finds a device
locked waits, within its budget, and is refused naming the holder.
``DeviceLocks`` live in this worker's memory: with the SQLite record another
hermes worker does not see them (NorFab 0.25 has no lock across workers).
``FleetDeviceLocks`` take them in the shared record as well: session
advisory locks, which end with their connection, so a killed worker's locks
end with it.

A killed holder's change job may still be running on the network worker
(a kill does not reach it), and so may the job of a holder that stopped
waiting for its reply. One worker knows its own (its markers of changes in
flight refuse the devices, ``outcomes``); in a fleet each change job is
written to the record before it is sent and removed once its reply is read,
so the next holder of the device, on any worker, finds the jobs left behind
and waits for each to end on the network worker before it touches the
device (``wait_left``).
"""

import logging
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable, Dict, List, Optional

from ...errors import RecordsUnavailable
from ...models import DeviceLock, now_iso

log = logging.getLogger(__name__)

WAIT_STEP = 0.2  # seconds between looks at a stop while waiting
LOOK_STEP = 0.5  # seconds between asks of the network worker whether a job left behind still runs

# pending(service, job_uuid): whether the job still runs on a worker of the service; None: not every one answered
Pending = Callable[[str, str], Optional[bool]]


@dataclass(eq=False)
class Holder:
    """One change call holding device locks (each call its own, even within one run)."""

    run_id: str
    agent: str
    tool: str
    since: float = field(default_factory=time.time)

    def describe(self) -> str:
        taken = datetime.fromtimestamp(self.since, timezone.utc).isoformat(timespec="seconds")
        return f"run {self.run_id} of agent '{self.agent}' ({self.tool}, since {taken})"


def shown(device: str, h: Holder) -> DeviceLock:
    since = datetime.fromtimestamp(h.since, timezone.utc).isoformat(timespec="seconds")
    return DeviceLock(device=device, run_id=h.run_id, agent=h.agent, tool=h.tool, since=since)


class DeviceLocks:
    """Device locks of one worker."""

    def __init__(self) -> None:
        self._held: Dict[str, Holder] = {}
        self._changed = threading.Condition()

    def acquire(
        self,
        devices: List[str],
        holder: Holder,
        wait: float,
        stopped: Callable[[], bool],
        waiting: Callable[[str], None] = lambda why: None,
    ) -> Optional[str]:
        """Take every device's lock, or none; why not (naming the holder) after waiting up to ``wait`` s.
        ``waiting(why)`` is told once when the call starts to wait, so its operator knows why it pauses."""
        deadline = time.time() + max(wait, 0.0)
        told = False
        with self._changed:
            while True:
                busy = [(device, self._held[device]) for device in devices if device in self._held]
                if not busy:
                    self._held.update({device: holder for device in devices})
                    return None
                left = deadline - time.time()
                if left <= 0 or stopped():
                    device, other = busy[0]
                    return f"device {device} is being changed by {other.describe()}; waited {wait:.0f}s"
                if not told:
                    told = True
                    device, other = busy[0]
                    waiting(f"device {device} is being changed by {other.describe()}")
                self._changed.wait(min(WAIT_STEP, left))

    def release(self, holder: Holder) -> None:
        with self._changed:
            for device in [d for d, h in self._held.items() if h is holder]:
                del self._held[device]
            self._changed.notify_all()

    def held(self, agent: Optional[str] = None) -> List[DeviceLock]:
        with self._changed:
            held = sorted(self._held.items())
        return [shown(device, h) for device, h in held if agent in (None, h.agent)]

    def sending(self, job_uuid: str, service: str, devices: List[str], run_id: str) -> None:
        """A change job is about to be sent (one worker's markers of changes in flight say so already)."""

    def settled(self, job_uuid: str) -> None:
        """A change job's reply was read, or the job was never sent."""

    def wait_left(
        self,
        devices: List[str],
        pending: Pending,
        deadline: float,
        stopped: Callable[[], bool],
        waiting: Callable[[str], None],
    ) -> Optional[str]:
        """Wait until no change job an earlier holder left behind runs on ``devices``; why not, else None."""
        return None


def lock_name(device: str) -> str:
    return f"device:{device}"


class FleetDeviceLocks(DeviceLocks):
    """
    Device locks of a fleet: this worker's, then the shared record's.

    Args:
        db: the PostgreSQL record (``records.pg.PgDatabase``).
        worker: this worker's name, in the holders the others read.
    """

    def __init__(self, db: Any, worker: str) -> None:
        super().__init__()
        self.db, self.worker = db, worker
        self._sessions: Dict[Holder, Any] = {}  # holder -> the connection holding its advisory locks

    def acquire(
        self,
        devices: List[str],
        holder: Holder,
        wait: float,
        stopped: Callable[[], bool],
        waiting: Callable[[str], None] = lambda why: None,
    ) -> Optional[str]:
        deadline = time.time() + max(wait, 0.0)
        refused = super().acquire(devices, holder, wait, stopped, waiting)
        if refused:
            return refused
        session = None
        try:
            session = self.db.hold([lock_name(d) for d in devices], deadline - time.time(), stopped)
            if session is not None:
                for device in devices:
                    self.db.on(
                        session,
                        "INSERT INTO device_locks (device, worker, run_id, agent, tool, since) VALUES "
                        "(?, ?, ?, ?, ?, ?) ON CONFLICT (device) DO UPDATE SET worker = excluded.worker, "
                        "run_id = excluded.run_id, agent = excluded.agent, tool = excluded.tool, since = excluded.since",
                        [device, self.worker, holder.run_id, holder.agent, holder.tool, holder.since],
                    )
        except RecordsUnavailable as error:
            if session is not None:
                self.db.release(session)
            super().release(holder)
            return (
                f"device locks are held in the records database, which does not answer ({error}); no change is "
                f"made until it does: check the PostgreSQL server and the connection string {self.db.source} names"
            )
        if session is None:
            super().release(holder)
            return self._busy(devices, wait)
        with self._changed:
            self._sessions[holder] = session
        return None

    def _busy(self, devices: List[str], wait: float) -> str:
        """Why the fleet refused: the holder another worker wrote, when it is still there."""
        with self.db.reading() as db:
            marks = ", ".join("?" * len(devices))
            row = db.execute(
                f"SELECT * FROM device_locks WHERE device IN ({marks}) ORDER BY device", devices
            ).fetchone()
        if row is None:
            return f"device {devices[0]} is being changed by another hermes worker; waited {wait:.0f}s"
        other = Holder(row["run_id"], row["agent"], row["tool"], row["since"])
        return f"device {row['device']} is being changed by {other.describe()} on worker {row['worker']}; waited {wait:.0f}s"

    def sending(self, job_uuid: str, service: str, devices: List[str], run_id: str) -> None:
        """Written before the job goes out, and durable: a worker killed right after leaves it."""
        with self.db.transaction() as db:
            for device in devices:
                db.execute(
                    "INSERT INTO change_jobs (job_uuid, device, worker, run_id, service, sent) VALUES (?, ?, ?, ?, ?, ?)",
                    [job_uuid, device, self.worker, run_id, service, now_iso()],
                )

    def settled(self, job_uuid: str) -> None:
        try:
            with self.db.transaction() as db:
                db.execute("DELETE FROM change_jobs WHERE job_uuid = ?", [job_uuid])
        except RecordsUnavailable:  # the next holder asks the network worker, finds it ended, removes it
            log.warning(f"{self.worker} - Change job {job_uuid} stays listed in the records until the next holder")

    def wait_left(
        self,
        devices: List[str],
        pending: Pending,
        deadline: float,
        stopped: Callable[[], bool],
        waiting: Callable[[str], None],
    ) -> Optional[str]:
        """Ask the network worker about each job left behind on ``devices`` until each has ended (its rows
        removed then), or refuse at ``deadline``, naming the job."""
        started, told = time.time(), False
        try:
            while True:
                with self.db.reading() as db:
                    marks = ", ".join("?" * len(devices))
                    rows = db.execute(
                        f"SELECT * FROM change_jobs WHERE device IN ({marks}) ORDER BY sent, device", devices
                    ).fetchall()
                jobs: Dict[str, Any] = {}  # job UUID -> its first row: a job of several devices is asked once
                for row in rows:
                    jobs.setdefault(row["job_uuid"], row)
                running, state = None, ""
                for job_uuid, row in jobs.items():
                    now = pending(row["service"], job_uuid)
                    if now is False:
                        self.settled(job_uuid)
                    elif running is None:
                        running, state = (
                            row,
                            "still running" if now else "not known to have ended (not every worker answered)",
                        )
                if running is None:
                    return None
                why = (
                    f"device {running['device']} has change job {running['job_uuid']} of run {running['run_id']} "
                    f"(worker {running['worker']}, which no longer holds the device) {state} on {running['service']}"
                )
                if time.time() >= deadline or stopped():
                    return f"{why}; waited {time.time() - started:.0f}s"
                if not told:
                    told = True
                    waiting(why)
                time.sleep(min(LOOK_STEP, max(deadline - time.time(), 0.0)))
        except RecordsUnavailable as error:
            return f"the records database does not answer ({error}); no change is made until it does"

    def held(self, agent: Optional[str] = None) -> List[DeviceLock]:
        """The fleet's locks: holder rows whose advisory lock a live session still holds."""
        with self.db.reading() as db:
            rows = db.execute("SELECT * FROM device_locks ORDER BY device").fetchall()
        live = self.db.taken([lock_name(row["device"]) for row in rows])
        return [
            shown(row["device"], Holder(row["run_id"], row["agent"], row["tool"], row["since"]))
            for row in rows
            if lock_name(row["device"]) in live and agent in (None, row["agent"])
        ]

    def release(self, holder: Holder) -> None:
        with self._changed:
            session = self._sessions.pop(holder, None)
        if session is not None:
            try:
                self.db.on(
                    session, "DELETE FROM device_locks WHERE worker = ? AND run_id = ?", [self.worker, holder.run_id]
                )
            except (
                RecordsUnavailable
            ):  # the connection broke: its locks ended with it; the next holder overwrites the row
                log.warning(f"{self.worker} - Device lock holder rows of run {holder.run_id} stay until overwritten")
            self.db.release(session)
        super().release(holder)
