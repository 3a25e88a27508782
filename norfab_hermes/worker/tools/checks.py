"""
Reading devices around a change: its preview, and its verification.

- preview: nornir cfg's dry run of the change's own task arguments (for a
  workflow: of each of its nornir cfg steps), or a read-only tool of the same
  agent, per device, secrets masked, bounded and cleaned for an operator's screen;
- verify: a read-only tool of the same agent, read before the change (what
  the devices showed) and after it (what they must show on every device the
  change named); after a rollback, the devices must show again what they
  showed before.

Each read is a NorFab job of its own, through the shared dispatcher (same guards,
same per-target slots); its job UUID goes into the change's record.
"""

import json
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

from ...models import CheckResult
from ...safety.changes import clean_text, unmet
from ...safety.redact import scrub
from .calls import CallTrace, ToolError, ToolRun
from .dispatch import Dispatcher
from .replies import render
from .specs import JobTarget

PREVIEW_CHARS = 3000  # per device, on an operator's screen and in the approval record
PREVIEW_DEVICES = 20


@dataclass(frozen=True)
class ChangeCall:
    """One change call as the envelope handles it: the tool, the model's (checked) arguments, the run."""

    spec: Any  # a ToolSpec with approval, or a WorkflowSpec
    arguments: Dict[str, Any]
    run: ToolRun
    interrupted: Callable[[], bool]

    def stopped(self) -> bool:
        return self.interrupted() or self.run.stop_reason is not None


@dataclass(frozen=True)
class StepCall:
    """A job the change sends on its own behalf (a dry run of a workflow step): a name and a target."""

    name: str
    target: JobTarget

    def where(self) -> Tuple[str, str, Any]:
        return self.target.service, self.target.task, self.target.workers


def device_texts(reply: Any, headers: bool) -> Dict[str, str]:
    """Output per device of a nornir-style reply (keyed by host, then command); other replies under '*'."""
    texts: Dict[str, List[str]] = {}
    for result in (reply or {}).values():
        data = result.get("result") if isinstance(result, dict) else None
        if not isinstance(data, dict):
            texts.setdefault("*", []).append(json.dumps(data, default=str))
            continue
        for host, outputs in data.items():
            parts = outputs.items() if isinstance(outputs, dict) else [("", outputs)]
            for command, output in parts:
                shown = f"{command}:\n{output}" if headers and command and len(parts) > 1 else str(output)
                texts.setdefault(str(host), []).append(shown)
    return {host: "\n".join(parts) for host, parts in texts.items()}


class Checks:
    """Previews and verifications of the changes of one worker's agents."""

    def __init__(self, dispatcher: Dispatcher, lookup: Callable[[str, str], Any]) -> None:
        self.dispatcher = dispatcher
        self.lookup = lookup  # (agent, tool name) -> the agent's spec of that tool

    def read(self, call: ChangeCall, check: Any) -> Tuple[Dict[str, str], Optional[str]]:
        """Run the read-only tool a preview or verify names, with the change call's arguments passed on."""
        agent, run = call.spec.agent, call.run
        spec = self.lookup(agent, check.tool)
        if spec is None or spec.changes:
            raise ToolError(f"{check.tool} is not a read-only tool of agent '{agent}'")
        passed = {name: call.arguments[name] for name in check.arguments if name in call.arguments}
        kwargs = self.dispatcher.prepare(spec, passed)
        trace = CallTrace()
        reply = self.dispatcher.dispatch(
            spec, kwargs, self.dispatcher.call_timeout(spec, run), run, call.interrupted, trace
        )
        _, status, error = render(spec, trace.job_uuid, reply, passed, self.dispatcher.secrets(), run.started)
        if status != "completed":
            raise ToolError(f"{check.tool} (job {trace.job_uuid}) failed: {error}")
        return device_texts(reply, headers=True), trace.job_uuid

    def preview(self, call: ChangeCall, kwargs: Dict[str, Any]) -> Dict[str, str]:
        """What the change (these task arguments) would do, per device, for the operator; {} without a preview."""
        spec = call.spec
        preview = spec.definition.preview
        if preview is None:
            return {}
        call.run.event(f"tool {spec.name} previewing its change ({preview.tool or 'dry run'})", resource=[spec.name])
        if preview.tool:
            texts, _ = self.read(call, preview)
        elif "workflow" in kwargs:
            texts = self._dry_run_steps(call, kwargs["workflow"])
        else:
            texts = self._dry_run(call, spec, {**kwargs, "dry_run": True})
        shown = sorted(texts.items())[:PREVIEW_DEVICES]
        secrets = self.dispatcher.secrets()
        # masked like a tool result: the preview goes to the operator, the result and the run records
        return {device: clean_text(scrub(text, secrets), PREVIEW_CHARS) for device, text in shown}

    def _dry_run(self, call: ChangeCall, target: Any, kwargs: Dict[str, Any]) -> Dict[str, str]:
        trace, run = CallTrace(), call.run
        reply = self.dispatcher.dispatch(
            target, kwargs, self.dispatcher.call_timeout(target, run), run, call.interrupted, trace
        )
        failed = [
            f"{w}: {'; '.join(r.get('errors') or [str(r.get('status'))])}"
            for w, r in (reply or {}).items()
            if r.get("failed")
        ]
        if not reply or failed:
            raise ToolError(f"the dry run (job {trace.job_uuid}) failed: {'; '.join(failed) or 'no reply'}")
        return device_texts(reply, headers=False)

    def _dry_run_steps(self, call: ChangeCall, workflow: Dict[str, Any]) -> Dict[str, str]:
        """A workflow's preview: the dry run of each of its nornir cfg steps, per device."""
        spec = call.spec
        texts: Dict[str, List[str]] = {}
        for name, step in workflow.items():
            if not isinstance(step, dict) or (step.get("service"), step.get("task")) != ("nornir", "cfg"):
                continue
            target = StepCall(f"{spec.name}:{name}", JobTarget("nornir", "cfg", step["workers"], spec.target.timeout))
            for device, text in self._dry_run(call, target, {**step["kwargs"], "dry_run": True}).items():
                texts.setdefault(device, []).append(f"[step {name}]\n{text}")
        return {device: "\n".join(parts) for device, parts in texts.items()}

    def verify(self, call: ChangeCall, devices: List[str], before: Optional[Dict[str, str]] = None) -> CheckResult:
        """Read the verify tool: against the expectations, or (``before``) against what the devices showed then."""
        spec = call.spec
        check = spec.definition.verify
        what = "the devices against what they showed before" if before is not None else "its change"
        call.run.event(f"tool {spec.name} verifying {what} ({check.tool})", resource=[spec.name])
        try:
            texts, uuid = self.read(call, check)
        except ToolError as error:
            return CheckResult(passed=False, problems=[f"the check could not read the devices: {error}"])
        problems = []
        for device in devices or sorted(texts):
            text = texts.get(device)
            if text is None:
                problems.append(f"{device}: {check.tool} returned nothing for it")
            elif before is not None:
                if text != before.get(device):
                    problems.append(f"{device} does not show what it showed before the change")
            else:
                expect = check.expect
                unshown = unmet(text, expect.contains, expect.absent, expect.matches, call.arguments)
                problems += [f"{device} {problem}" for problem in unshown]
        return CheckResult(passed=not problems, job_uuid=uuid, problems=problems)
