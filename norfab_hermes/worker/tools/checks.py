"""
Reading devices around a change: its preview, and its verification.

- preview: nornir cfg's dry run of the change's own task arguments (for a
  workflow: of each of its nornir cfg steps), or a read-only tool of the same
  agent, per device, bounded and cleaned for an operator's screen;
- verify: a read-only tool of the same agent, read before the change (what
  the devices showed) and after it (what they must show on every device the
  change named); after a rollback, the devices must show again what they
  showed before.

Each read is a NorFab job of its own, through the tool runner (same guards,
same per-target slots); its job UUID goes into the change's record.
"""

import json
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

from ...models import CheckResult
from ...safety.changes import clean_text, unmet
from .specs import CallTrace, JobTarget, ToolError

PREVIEW_CHARS = 3000  # per device, on an operator's screen and in the approval record
PREVIEW_DEVICES = 20


@dataclass(frozen=True)
class StepCall:
    """A job the change sends on its own behalf (a dry run of a workflow step): a name and a target."""

    name: str
    target: JobTarget


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

    def __init__(self, runner: Any, lookup: Callable[[str, str], Any]) -> None:
        self.runner = runner
        self.lookup = lookup  # (agent, tool name) -> the agent's spec of that tool

    def read(
        self, owner: Any, check: Any, arguments: Dict[str, Any], run: Any, interrupted: Callable[[], bool]
    ) -> Tuple[Dict[str, str], Optional[str]]:
        """Run the read-only tool a preview or verify names, with the change call's arguments passed on."""
        spec = self.lookup(owner.agent, check.tool)
        if spec is None or spec.changes:
            raise ToolError(f"{check.tool} is not a read-only tool of agent '{owner.agent}'")
        passed = {name: arguments[name] for name in check.arguments if name in arguments}
        kwargs = self.runner.prepare(spec, passed)
        trace = CallTrace()
        reply = self.runner.dispatch(spec, kwargs, self.runner.call_timeout(spec, run), run, interrupted, trace)
        _, status, error = self.runner.render(spec, trace.job_uuid, reply, passed, run.started)
        if status != "completed":
            raise ToolError(f"{check.tool} (job {trace.job_uuid}) failed: {error}")
        return device_texts(reply, headers=True), trace.job_uuid

    def preview(
        self, spec: Any, kwargs: Dict[str, Any], arguments: Dict[str, Any], run: Any, interrupted: Callable[[], bool]
    ) -> Dict[str, str]:
        """What the change would do, per device, for the operator; {} when the tool declares no preview."""
        preview = spec.definition.preview
        if preview is None:
            return {}
        run.event(f"tool {spec.name} previewing its change ({preview.tool or 'dry run'})", resource=[spec.name])
        if preview.tool:
            texts, _ = self.read(spec, preview, arguments, run, interrupted)
        elif "workflow" in kwargs:
            texts = self._dry_run_steps(spec, kwargs["workflow"], run, interrupted)
        else:
            texts = self._dry_run(spec, {**kwargs, "dry_run": True}, run, interrupted)
        shown = sorted(texts.items())[:PREVIEW_DEVICES]
        return {device: clean_text(text, PREVIEW_CHARS) for device, text in shown}

    def _dry_run(self, call: Any, kwargs: Dict[str, Any], run: Any, interrupted: Callable[[], bool]) -> Dict[str, str]:
        trace = CallTrace()
        reply = self.runner.dispatch(call, kwargs, self.runner.call_timeout(call, run), run, interrupted, trace)
        failed = [
            f"{w}: {'; '.join(r.get('errors') or [str(r.get('status'))])}"
            for w, r in (reply or {}).items()
            if r.get("failed")
        ]
        if not reply or failed:
            raise ToolError(f"the dry run (job {trace.job_uuid}) failed: {'; '.join(failed) or 'no reply'}")
        return device_texts(reply, headers=False)

    def _dry_run_steps(
        self, spec: Any, workflow: Dict[str, Any], run: Any, interrupted: Callable[[], bool]
    ) -> Dict[str, str]:
        """A workflow's preview: the dry run of each of its nornir cfg steps, per device."""
        texts: Dict[str, List[str]] = {}
        for name, step in workflow.items():
            if not isinstance(step, dict) or (step.get("service"), step.get("task")) != ("nornir", "cfg"):
                continue
            call = StepCall(f"{spec.name}:{name}", JobTarget("nornir", "cfg", step["workers"], spec.target.timeout))
            for device, text in self._dry_run(call, {**step["kwargs"], "dry_run": True}, run, interrupted).items():
                texts.setdefault(device, []).append(f"[step {name}]\n{text}")
        return {device: "\n".join(parts) for device, parts in texts.items()}

    def verify(
        self,
        spec: Any,
        arguments: Dict[str, Any],
        devices: List[str],
        run: Any,
        interrupted: Callable[[], bool],
        before: Optional[Dict[str, str]] = None,
    ) -> Tuple[CheckResult, Dict[str, str]]:
        """Read the verify tool: against the expectations, or (``before``) against what the devices showed then."""
        check = spec.definition.verify
        what = "the devices against what they showed before" if before is not None else "its change"
        run.event(f"tool {spec.name} verifying {what} ({check.tool})", resource=[spec.name])
        try:
            texts, uuid = self.read(spec, check, arguments, run, interrupted)
        except ToolError as error:
            return CheckResult(passed=False, problems=[f"the check could not read the devices: {error}"]), {}
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
                problems += [
                    f"{device} {p}" for p in unmet(text, expect.contains, expect.absent, expect.matches, arguments)
                ]
        return CheckResult(passed=not problems, job_uuid=uuid, problems=problems), texts
