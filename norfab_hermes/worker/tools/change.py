"""
A change call: an approval-gated tool or a workflow tool, inside the change envelope.

The call goes through these steps; any of them refuses it, with the reason:

1. Build: the arguments pass the tool's guards (a workflow's file is read
   and every step checked) and the call names its devices exactly.
2. Admission: no device has a change of unknown outcome, the agent's
   breaker is closed, its windows (and the tool's) are open, and the run and
   the agent have changes left.
3. Locks: every named device, waiting at most ``changes.lock_wait``.
4. Preview (dry run or a read-only tool) and the digest of tool, task
   arguments, targets and preview.
5. Approval, showing the devices, the preview and the digest.
6. The approved change is the executed change: the call is built and
   previewed again, and its digest must be the approved one; admission is
   checked again (a window may have closed meanwhile).
7. Before: the verify tool reads the devices.
8. Send: a marker names the job before it goes out and goes once its reply
   is read; a job whose reply never came has an unknown outcome.
9. Verify; a failed check counts against the agent's breaker and, when the
   agent's policy allows, the declared rollback runs (approval-gated unless
   it says otherwise); then the devices must show what they showed before.
10. The locks are released, whatever happened.
"""

import json
import uuid as uuids
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

from ...models import ChangePolicy, ChangeRecord, OutcomeUnknown, RollbackRecord, WorkflowDefinition
from ...safety import commands, guards
from ...safety.changes import EXACT_FILTERS, change_devices, change_digest, substitute
from ..changes.control import ChangeControl
from ..changes.locks import Holder
from ..changes.outcomes import CRASHED
from ..runs.run import now_iso
from . import workflow
from .checks import Checks
from .runner import devices_in
from .specs import CallTrace, ChangeAsk, ToolError, WorkflowSpec

MIN_WAIT = 1.0  # seconds of the run's budget a change keeps back while it waits for a lock


@dataclass
class Built:
    """A change as a call builds it: the task arguments that would be sent and the devices they name."""

    kwargs: Dict[str, Any]  # a workflow's: {"workflow": the workflow itself}
    devices: List[str]
    sha256: Optional[str] = None  # a workflow file's


class ChangeRunner:
    """Runs the change calls of one worker's agents."""

    def __init__(
        self,
        runner: Any,
        control: ChangeControl,
        lookup: Callable[[str, str], Any],
        policy_of: Callable[[str], ChangePolicy],
        worker_name: str,
    ) -> None:
        self.runner = runner
        self.control = control
        self.checks = Checks(runner, lookup)
        self.policy_of = policy_of
        self.worker_name = worker_name

    def run(
        self, spec: Any, arguments: Dict[str, Any], run: Any, interrupted: Callable[[], bool], trace: CallTrace
    ) -> Tuple[str, str, Optional[str]]:
        """Make one change; the text the model reads, the call's status and error."""
        policy = self.policy_of(spec.agent)
        built = self.build(spec, arguments)
        self.admit(spec, policy, built, run)
        holder = Holder(run.run_id, spec.agent, spec.name)
        try:

            def stopped() -> bool:
                return interrupted() or run.stop_reason is not None

            locked = self.control.locks.acquire(built.devices, holder, self._lock_wait(policy, run), stopped)
            if locked:
                raise ToolError(f"{locked}; the call was not made")
            preview = self.checks.preview(spec, built.kwargs, arguments, run, interrupted)
            digest = self.digest(spec, built, preview)
            trace.change = ChangeRecord(devices=built.devices, digest=digest, preview=preview, outcome="refused")
            self.runner.approve(spec, arguments, run, ChangeAsk(built.devices, digest, preview, header=header(built)))
            built = self.confirm(spec, arguments, policy, digest, preview, run, interrupted)
            before = self._before(spec, arguments, run, interrupted)
            run.event(f"tool {spec.name} changing {', '.join(built.devices) or 'no named device'}: change {digest}")
            try:
                reply = self.send(spec, built.kwargs, built.devices, run, interrupted, trace)
            except ToolError:
                if trace.job_uuid:
                    trace.change = trace.change.model_copy(update={"outcome": "outcome_unknown"})
                raise
            text, status, error = self.render(spec, trace.job_uuid, built, reply, arguments, run)
            trace.change = self.after(spec, arguments, built, before, run, interrupted, policy, trace.change, status)
            return self.report(text, status, error, trace.change)
        finally:
            if trace.job_uuid is None:  # never sent: the run keeps its change
                run.budget.release_change()
            self.control.locks.release(holder)

    # ------------------------------------------------------------- building

    def build(self, spec: Any, arguments: Dict[str, Any]) -> Built:
        if isinstance(spec, WorkflowSpec):
            self.runner.validate(spec, arguments, {"workers"})
            flow, sha, devices = workflow.build(spec, self.runner.client, arguments, spec.target.timeout)
            return Built({"workflow": flow}, devices, sha)
        kwargs = self.runner.prepare(spec, arguments)
        try:
            devices = change_devices(kwargs)
        except ValueError as error:
            raise ToolError(f"{error}; the call was not made") from None
        if spec.target.service == "nornir" and not devices:
            raise ToolError(f"a change names its devices ({' or '.join(EXACT_FILTERS)}); the call was not made")
        return Built(kwargs, devices)

    def digest(self, spec: Any, built: Built, preview: Dict[str, str]) -> str:
        return change_digest(
            {
                "agent": spec.agent,
                "tool": spec.name,
                "target": list(spec.where()),
                "kwargs": built.kwargs,
                "devices": built.devices,
                "preview": preview,
            }
        )

    # ------------------------------------------------------------ admission

    def admit(self, spec: Any, policy: ChangePolicy, built: Built, run: Any) -> None:
        """Refuse a change the envelope does not allow now; else hold one of the run's changes."""
        refusal = self.control.refusal(spec.agent, policy, spec.name, spec.definition.windows, built.devices)
        refusal = refusal or run.budget.reserve_change()
        if refusal:
            raise ToolError(f"{refusal}; the call was not made")

    @staticmethod
    def _lock_wait(policy: ChangePolicy, run: Any) -> float:
        return max(0.0, min(policy.lock_wait, run.remaining() - MIN_WAIT))

    def confirm(
        self,
        spec: Any,
        arguments: Dict[str, Any],
        policy: ChangePolicy,
        digest: str,
        preview: Dict[str, str],
        run: Any,
        interrupted: Callable[[], bool],
    ) -> Built:
        """The change as it would run now: refused unless it is the change that was approved."""
        again = self.build(spec, arguments)
        shown = self.checks.preview(spec, again.kwargs, arguments, run, interrupted)
        now = self.digest(spec, again, shown)
        if now != digest:
            changed = "the preview (the devices changed since)" if shown != preview else "the task arguments or file"
            message = (
                f"the change is not the one approved ({digest}): {changed} differ, now {now}; the call was not made"
            )
            run.warnings.append(message)
            run.event(f"tool {spec.name} refused: {message}", severity="WARNING")
            raise ToolError(message)
        refusal = self.control.refusal(spec.agent, policy, spec.name, spec.definition.windows, again.devices)
        if refusal:
            raise ToolError(f"{refusal}; the call was not made")
        return again

    def _before(
        self, spec: Any, arguments: Dict[str, Any], run: Any, interrupted: Callable[[], bool]
    ) -> Dict[str, str]:
        """What the verify tool reads before the change: a rollback must bring the devices back to it."""
        if spec.definition.verify is None:
            return {}
        try:
            before, _ = self.checks.read(spec, spec.definition.verify, arguments, run, interrupted)
        except ToolError as error:
            raise ToolError(
                f"the change could not be checked before it is made: {error}; the call was not made"
            ) from None
        return before

    # -------------------------------------------------------------- sending

    def send(
        self,
        call: Any,
        kwargs: Dict[str, Any],
        devices: List[str],
        run: Any,
        interrupted: Callable[[], bool],
        trace: CallTrace,
    ) -> Any:
        """Send a change job with a marker around it; a job whose reply is not read has an unknown outcome."""
        job = uuids.uuid4().hex
        service, task, workers = call.target.service, call.target.task, call.target.workers
        change = OutcomeUnknown(
            outcome_id=job,
            job_uuid=job,
            run_id=run.run_id,
            agent=run.agent,
            worker=self.worker_name,
            session_id=run.session_id,
            tool=call.name,
            target=f"{service}.{task} on {workers}",
            devices=devices,
            started=now_iso(),
            reason=CRASHED,
        )
        self.control.outcomes.begin(change)
        run.event(f"tool {call.name} calling {service}.{task}", resource=[call.name])
        try:
            reply = self.runner.dispatch(
                call, kwargs, self.runner.call_timeout(call, run), run, interrupted, trace, job
            )
            if not reply:
                raise ToolError(f"job {job} for {service}.{task} got no reply in time")
        except ToolError as error:
            if trace.job_uuid is None:
                self.control.outcomes.end(job)
                raise
            self.control.limits.count(run.agent)
            reason = f"the tool stopped waiting for the change: {error}"
            self.control.outcomes.unknown(change.model_copy(update={"reason": reason}))
            message = f"the outcome of change job {job} on {', '.join(devices)} is unknown ({error}); an operator must check and acknowledge it"
            run.warnings.append(message)
            run.event(f"tool {call.name}: {message}", severity="WARNING")
            raise ToolError(message) from None
        self.control.outcomes.end(job)
        self.control.limits.count(run.agent)
        return reply

    def render(
        self, spec: Any, uuid: Optional[str], built: Built, reply: Any, arguments: Dict[str, Any], run: Any
    ) -> Tuple[str, str, Optional[str]]:
        """The change's reply as the model reads it; the devices it reached count against the run."""
        if isinstance(spec, WorkflowSpec):
            text, status, error, steps = workflow.render(spec, uuid, reply, built.sha256, self.runner.secrets())
            run.touched({host for _, workers in steps for host in devices_in(workers)})
            return text, status, error
        if spec.target.service == "nornir":
            run.touched(devices_in(reply))
        return self.runner.render(spec, uuid, reply, arguments, run.started)

    # ------------------------------------------------------ after the change

    def after(
        self,
        spec: Any,
        arguments: Dict[str, Any],
        built: Built,
        before: Dict[str, str],
        run: Any,
        interrupted: Callable[[], bool],
        policy: ChangePolicy,
        record: ChangeRecord,
        status: str,
    ) -> ChangeRecord:
        """Verify the change; roll it back when the check fails and the policy allows."""
        if spec.definition.verify is None:
            return record.model_copy(update={"outcome": "unverified" if status == "completed" else "failed"})
        check, _ = self.checks.verify(spec, arguments, built.devices, run, interrupted)
        opened = self.control.breakers.record(spec.agent, check.passed, policy.breaker_after)
        if opened:
            run.warnings.append(opened)
            run.event(f"tool {spec.name}: {opened}", severity="WARNING")
        if check.passed:
            return record.model_copy(
                update={"outcome": "verified" if status == "completed" else "failed", "verify": check}
            )
        run.event(f"tool {spec.name}: verification failed: {'; '.join(check.problems)}", severity="WARNING")
        rollback = self.rollback(spec, arguments, built, before, run, interrupted, policy, record.digest)
        outcome = "verify_failed"
        if rollback and rollback.state in ("done", "failed"):
            outcome = (
                "rolled_back"
                if rollback.state == "done" and rollback.check and rollback.check.passed
                else "rollback_failed"
            )
        return record.model_copy(update={"outcome": outcome, "verify": check, "rollback": rollback})

    def rollback(
        self,
        spec: Any,
        arguments: Dict[str, Any],
        built: Built,
        before: Dict[str, str],
        run: Any,
        interrupted: Callable[[], bool],
        policy: ChangePolicy,
        digest: str,
    ) -> Optional[RollbackRecord]:
        definition = spec.definition.rollback
        if definition is None:
            return None
        if not policy.rollback:
            return RollbackRecord(state="not_allowed", error="the agent's changes.rollback is off")
        trace = CallTrace()
        try:
            call, undo, shown = self._rollback_call(spec, arguments, built)
        except ToolError as error:
            return RollbackRecord(state="failed", error=str(error))
        if definition.approval:
            ask = ChangeAsk(undo.devices, digest, shown, "roll back the change of tool", " (its verification failed)")
            try:
                self.runner.approve(spec, arguments, run, ask)
            except ToolError as error:
                return RollbackRecord(state="declined", error=str(error))
        run.event(f"tool {spec.name} rolling back change {digest} on {', '.join(undo.devices)}", severity="WARNING")
        try:
            reply = self.send(call, undo.kwargs, undo.devices, run, interrupted, trace)
            _, status, error = self.render(call, trace.job_uuid, undo, reply, arguments, run)
        except ToolError as failed:
            return RollbackRecord(state="failed", job_uuid=trace.job_uuid, error=str(failed))
        check, _ = self.checks.verify(spec, arguments, built.devices, run, interrupted, before=before)
        state = "done" if status == "completed" else "failed"
        return RollbackRecord(state=state, job_uuid=trace.job_uuid, error=error, check=check)

    def _rollback_call(self, spec: Any, arguments: Dict[str, Any], built: Built) -> Tuple[Any, Built, Dict[str, str]]:
        """Where the rollback goes, what it sends, and what the operator is shown per device."""
        definition = spec.definition
        if definition.rollback.workflow:
            url = definition.rollback.workflow
            undo = WorkflowSpec(
                spec.agent,
                spec.name,
                WorkflowDefinition(
                    file=url,
                    input_schema={"type": "object", "properties": {name: {} for name in arguments}},
                    workers=spec.target.workers if isinstance(spec, WorkflowSpec) else "any",
                    timeout=spec.target.timeout,
                    allow_commands=definition.allow_commands,
                ),
            )
            flow, sha, devices = workflow.build(undo, self.runner.client, arguments, spec.target.timeout)
            shown = {device: f"workflow {url} (sha256 {sha})" for device in devices}
            return undo, Built({"workflow": flow}, devices, sha), shown
        name = rollback_argument(spec)
        try:
            guards.check_values(arguments)
            commands.check_spliced({k: v for k, v in arguments.items() if isinstance(v, str)})
            lines = substitute(definition.rollback.commands, arguments)
        except (ValueError, KeyError) as error:
            raise ToolError(f"the rollback commands cannot be filled in: {error}") from None
        kwargs = {k: v for k, v in spec.target.kwargs.items() if k not in (name, "job_data")}
        kwargs.update({k: built.kwargs[k] for k in EXACT_FILTERS if k in built.kwargs})
        kwargs[name] = lines
        return spec, Built(kwargs, built.devices), {device: "\n".join(lines) for device in built.devices}

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


def header(built: Built) -> str:
    return f" by workflow (sha256 {built.sha256[:16]})" if built.sha256 else ""


def rollback_argument(spec: Any) -> str:
    """The argument the change tool sends its commands with: rollback commands go there."""
    names = commands.command_arguments(set(spec.target.kwargs) | set((spec.parameters or {}).get("properties") or {}))
    return names[0] if names else ("config" if spec.target.task == "cfg" else "commands")
