"""
A change call: an approval-gated tool or a workflow tool, inside the change envelope.
What the call sends (its task arguments, digest and rollback call) is built by ``payload``.

The call goes through these steps; any of them refuses it, with the reason:

1. Build: the arguments pass the tool's guards (a workflow's file is read
   and every step checked) and the call names its devices exactly.
2. Admission: no device has a change of unknown outcome, the agent's
   breaker is closed, its windows (and the tool's) are open, and the run and
   the agent have changes left.
3. Locks: every named device, waiting at most ``changes.lock_wait``; in a
   fleet, also for any change job an earlier holder left running on them.
4. Preview (dry run or a read-only tool) and the digest of tool, task
   arguments, targets and preview.
5. Approval, showing the devices, the preview and the digest.
6. The approved change is the executed change: the call is built and
   previewed again, and its digest must be the approved one; admission is
   checked again (a window may have closed meanwhile).
7. Before: the verify tool reads the devices.
8. Send: a marker names the job before it goes out (in a fleet, the record
   lists it too) and goes once its reply is read; a job whose reply never
   came has an unknown outcome.
9. Verify; a failed check counts against the agent's breaker and, when the
   agent's policy allows, the declared rollback runs (approval-gated unless
   it says otherwise); then the devices must show what they showed before.
10. The locks are released, whatever happened.
"""

import json
import time
from typing import Any, Callable, Dict, Optional, Tuple

from ...errors import RecordsUnavailable
from ...models import ChangePolicy, ChangeRecord, OutcomeUnknown, RollbackRecord, now_iso
from ..approvals.approver import Approver
from ..approvals.request import ChangeAsk
from ..changes.control import ChangeControl
from ..changes.locks import Holder
from ..changes.outcomes import CRASHED
from . import payload, replies, workflow
from .calls import CallTrace, ToolError, ToolRun, approved
from .checks import ChangeCall, Checks
from .dispatch import Dispatcher, run_job_uuid
from .payload import Built
from .specs import WorkflowSpec

# told(agent, run_id, case_id, tool, job_uuid, record): a change sent, as it ended
Told = Callable[[str, str, Optional[str], str, str, ChangeRecord], None]
MIN_WAIT = 1.0  # seconds of the run's budget a change keeps back while it waits for a lock


class ChangeRunner:
    """Runs the change calls of one worker's agents."""

    def __init__(
        self,
        dispatcher: Dispatcher,
        approver: Approver,
        control: ChangeControl,
        lookup: Callable[[str, str], Any],
        policy_of: Callable[[str], ChangePolicy],
        worker_name: str,
        told: Optional[Told] = None,
    ) -> None:
        self.told = told  # the notifier: changes that rolled back or whose outcome is unknown
        self.dispatcher = dispatcher
        self.approver = approver
        self.control = control
        self.checks = Checks(dispatcher, lookup)
        self.policy_of = policy_of
        self.worker_name = worker_name

    def call(
        self, spec: Any, arguments: Dict[str, Any], run: ToolRun, interrupted: Callable[[], bool], trace: CallTrace
    ) -> Tuple[str, str, Optional[str]]:
        """Make one change (``kinds.ToolKind``); the text the model reads, the call's status and error."""
        call = ChangeCall(spec, arguments, run, interrupted)
        policy = self.policy_of(spec.agent)
        built = payload.build(self.dispatcher, call)
        self.admit(call, policy, built)
        holder = Holder(run.run_id, spec.agent, spec.name)
        locks = self.control.locks
        try:
            wait = self._lock_wait(policy, run)
            deadline = time.time() + wait

            def waiting(why: str) -> None:
                run.event(f"{spec.name} waiting up to {wait:.0f}s: {why}", severity="WARNING")

            locked = locks.acquire(built.devices, holder, wait, call.stopped, waiting)
            # a holder killed or given up meanwhile may have left its change job running on the device
            locked = locked or locks.wait_left(
                built.devices, self.dispatcher.job_pending, deadline, call.stopped, waiting
            )
            if locked:
                raise ToolError(f"{locked}; the call was not made")
            preview = self.checks.preview(call, built.kwargs)
            digest = payload.digest(call, built, preview)
            trace.change = ChangeRecord(devices=built.devices, digest=digest, preview=preview, outcome="refused")
            ask = ChangeAsk(built.devices, digest, preview, header=payload.header(built))
            trace.approved_by = approved(self.approver.approve(spec, arguments, run, ask))
            built = self.confirm(call, policy, digest, preview)
            before = self._before(call)
            run.event(f"tool {spec.name} changing {', '.join(built.devices) or 'no named device'}: change {digest}")
            try:
                reply = self.send(call, spec, built, trace)
            except ToolError:
                if trace.job_uuid:
                    trace.change = trace.change.model_copy(update={"outcome": "outcome_unknown"})
                raise
            text, status, error = self.render(call, spec, trace.job_uuid, built, reply)
            trace.change = self.after(call, policy, built, before, trace.change, status)
            return self.report(text, status, error, trace.change)
        finally:
            if trace.job_uuid is None:  # never sent: the run keeps its change
                run.budget.release_change()
            self.control.locks.release(holder)
            if trace.job_uuid and trace.change is not None and self.told is not None:
                self.told(spec.agent, run.run_id, run.case_id, spec.name, trace.job_uuid, trace.change)

    # ------------------------------------------------------------ admission

    def admit(self, call: ChangeCall, policy: ChangePolicy, built: Built) -> None:
        """Refuse a change the envelope does not allow now; else hold one of the run's changes."""
        refusal = self._closed(call, policy, built) or call.run.budget.reserve_change()
        if refusal:
            raise ToolError(f"{refusal}; the call was not made")

    def _closed(self, call: ChangeCall, policy: ChangePolicy, built: Built) -> Optional[str]:
        spec = call.spec
        return self.control.refusal(spec.agent, policy, spec.name, spec.definition.windows, built.devices)

    @staticmethod
    def _lock_wait(policy: ChangePolicy, run: ToolRun) -> float:
        return max(0.0, min(policy.lock_wait, run.remaining() - MIN_WAIT))

    def confirm(self, call: ChangeCall, policy: ChangePolicy, digest: str, preview: Dict[str, str]) -> Built:
        """The change as it would run now: refused unless it is the change that was approved."""
        again = payload.build(self.dispatcher, call)
        shown = self.checks.preview(call, again.kwargs)
        now = payload.digest(call, again, shown)
        if now != digest:
            changed = "the preview (the devices changed since)" if shown != preview else "the task arguments or file"
            message = (
                f"the change is not the one approved ({digest}): {changed} differ, now {now}; the call was not made"
            )
            call.run.warnings.append(message)
            call.run.event(f"tool {call.spec.name} refused: {message}", severity="WARNING")
            raise ToolError(message)
        refusal = self._closed(call, policy, again)
        if refusal:
            raise ToolError(f"{refusal}; the call was not made")
        return again

    def _before(self, call: ChangeCall) -> Dict[str, str]:
        """What the verify tool reads before the change: a rollback must bring the devices back to it."""
        check = call.spec.definition.verify
        if check is None:
            return {}
        try:
            before, _ = self.checks.read(call, check)
        except ToolError as error:
            raise ToolError(
                f"the change could not be checked before it is made: {error}; the call was not made"
            ) from None
        return before

    # -------------------------------------------------------------- sending

    def send(self, call: ChangeCall, target: Any, built: Built, trace: CallTrace) -> Any:
        """Send a change job (of ``target``: the tool, or its rollback) with a marker around it; a job whose
        reply is not read has an unknown outcome."""
        run = call.run
        job = run_job_uuid(run)
        service, task, workers = target.target.service, target.target.task, target.target.workers
        devices = built.devices
        change = OutcomeUnknown(
            outcome_id=job,
            job_uuid=job,
            run_id=run.run_id,
            agent=run.agent,
            worker=self.worker_name,
            session_id=run.session_id,
            tool=target.name,
            target=f"{service}.{task} on {workers}",
            devices=devices,
            started=now_iso(),
            reason=CRASHED,
        )
        self.control.outcomes.begin(change)
        locks = self.control.locks
        try:
            locks.sending(job, service, devices, run.run_id)
        except RecordsUnavailable as error:
            self.control.outcomes.end(job)
            raise ToolError(
                f"the change job could not be listed in the records ({error}); the call was not made"
            ) from None
        run.event(f"tool {target.name} calling {service}.{task}", resource=[target.name])
        try:
            timeout = self.dispatcher.call_timeout(target, run)
            reply = self.dispatcher.dispatch(target, built.kwargs, timeout, run, call.interrupted, trace, job)
            if not reply:
                raise ToolError(f"job {job} for {service}.{task} got no reply in time")
        except ToolError as error:
            if trace.job_uuid is None:
                self.control.outcomes.end(job)
                locks.settled(job)
                raise
            self.control.limits.count(run.agent)
            self.control.outcomes.unknown(change.model_copy(update={"reason": f"the tool stopped waiting: {error}"}))
            message = (
                f"the outcome of change job {job} on {', '.join(devices)} is unknown ({error}); "
                "an operator must check and acknowledge it"
            )
            run.warnings.append(message)
            run.event(f"tool {target.name}: {message}", severity="WARNING")
            raise ToolError(message) from None
        self.control.outcomes.end(job)
        locks.settled(job)
        self.control.limits.count(run.agent)
        return reply

    def render(
        self, call: ChangeCall, target: Any, uuid: Optional[str], built: Built, reply: Any
    ) -> Tuple[str, str, Optional[str]]:
        """A change's reply as the model reads it; the devices it reached count against the run."""
        if isinstance(target, WorkflowSpec):
            text, status, error, steps = workflow.render(
                target, uuid, reply, built.sha256 or "", self.dispatcher.secrets()
            )
            call.run.touched({host for _, workers in steps for host in replies.devices_in(workers)})
            return text, status, error
        if target.target.service == "nornir":
            call.run.touched(replies.devices_in(reply))
        return replies.render(target, uuid, reply, call.arguments, self.dispatcher.secrets(), call.run.started)

    # ------------------------------------------------------ after the change

    def after(
        self,
        call: ChangeCall,
        policy: ChangePolicy,
        built: Built,
        before: Dict[str, str],
        record: ChangeRecord,
        status: str,
    ) -> ChangeRecord:
        """Verify the change; roll it back when the check fails and the policy allows."""
        spec, run = call.spec, call.run
        if spec.definition.verify is None:
            return record.model_copy(update={"outcome": "unverified" if status == "completed" else "failed"})
        check = self.checks.verify(call, built.devices)
        opened = self.control.breakers.record(spec.agent, check.passed, policy.breaker_after)
        if opened:
            run.warnings.append(opened)
            run.event(f"tool {spec.name}: {opened}", severity="WARNING")
        if check.passed:
            outcome = "verified" if status == "completed" else "failed"
            return record.model_copy(update={"outcome": outcome, "verify": check})
        run.event(f"tool {spec.name}: verification failed: {'; '.join(check.problems)}", severity="WARNING")
        rollback = self.rollback(call, policy, built, before, record.digest)
        outcome = "verify_failed"
        if rollback and rollback.state == "done" and rollback.check and rollback.check.passed:
            outcome = "rolled_back"
        elif rollback and rollback.state in ("done", "failed"):
            outcome = "rollback_failed"
        return record.model_copy(update={"outcome": outcome, "verify": check, "rollback": rollback})

    def rollback(
        self, call: ChangeCall, policy: ChangePolicy, built: Built, before: Dict[str, str], digest: str
    ) -> Optional[RollbackRecord]:
        spec, run = call.spec, call.run
        definition = spec.definition.rollback
        if definition is None:
            return None
        if not policy.rollback:
            return RollbackRecord(state="not_allowed", error="the agent's changes.rollback is off")
        trace = CallTrace()
        try:
            target, undo, shown = payload.rollback_call(self.dispatcher, call, built)
        except ToolError as refused:
            return RollbackRecord(state="failed", error=str(refused))
        if definition.approval:
            ask = ChangeAsk(undo.devices, digest, shown, "roll back the change of tool", " (its verification failed)")
            try:
                approved(self.approver.approve(spec, call.arguments, run, ask))
            except ToolError as declined:
                return RollbackRecord(state="declined", error=str(declined))
        run.event(f"tool {spec.name} rolling back change {digest} on {', '.join(undo.devices)}", severity="WARNING")
        try:
            reply = self.send(call, target, undo, trace)
            _, status, error = self.render(call, target, trace.job_uuid, undo, reply)
        except ToolError as failed:
            return RollbackRecord(state="failed", job_uuid=trace.job_uuid, error=str(failed))
        check = self.checks.verify(call, built.devices, before=before)
        state = "done" if status == "completed" else "failed"
        return RollbackRecord(state=state, job_uuid=trace.job_uuid, error=error, check=check)

    @staticmethod
    def report(text: str, status: str, error: Optional[str], record: ChangeRecord) -> Tuple[str, str, Optional[str]]:
        """The model's view: the task's result, with what was changed, verified and rolled back."""
        payload = json.loads(text)
        payload["change"] = record.model_dump()
        if record.verify and not record.verify.passed:
            rolled = record.rollback
            after = f"; rollback {rolled.state}" + (f": {rolled.error}" if rolled.error else "") if rolled else ""
            error = f"verification failed: {'; '.join(record.verify.problems)}{after}"
            payload.update(ok=False, error=error)
            status = "failed"
        return json.dumps(payload, default=str), status, error
