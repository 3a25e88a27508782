"""
Workflow tools: one reviewed workflow file, run by NorFab's workflow service.

A call reads the pinned file again (a file that changed since it was
reviewed, or since it was approved, changes the change's digest), checks
every step as the file was checked at load, puts in the model's variables
(``${name}``, values already checked like any tool argument, and checked
again for the commands and device names they become) and sends the workflow
itself, never its URL: the workflow service runs exactly what was checked
and approved. Each step's timeout is capped by the tool's.

The model reads every step's outcome with its NorFab job UUID.
"""

import json
from datetime import datetime, timezone
from typing import Any, Dict, List, Optional, Tuple

from ...safety import commands, guards
from ...safety.changes import EXACT_FILTERS, change_devices, substitute
from ...safety.redact import redact
from ...safety.workflows import RUN_IF, Step, check_arguments
from .calls import ToolError
from .specs import WorkflowSpec


def build(
    spec: WorkflowSpec, client: Any, arguments: Dict[str, Any], timeout: float
) -> Tuple[Dict[str, Any], str, List[str]]:
    """The workflow to send for these (checked) arguments, the file's sha256 and the devices its steps name."""
    try:
        data, sha, steps = spec.read(client)
    except ValueError as error:
        raise ToolError(f"workflow {spec.definition.file} cannot run: {error}") from None
    spec.steps = steps
    try:
        # variables become commands and device names: single lines that chain nothing
        guards.check_values(arguments)
        commands.check_spliced(arguments)
    except ValueError as error:
        raise ToolError(str(error)) from None
    workflow: Dict[str, Any] = {
        k: v for k, v in data.items() if k in ("name", "description", "remove_no_match_results")
    }
    workflow.setdefault("name", spec.name)
    devices: List[str] = []
    for step in steps:
        where = f"step '{step.name}'"
        try:
            kwargs = substitute(step.kwargs, arguments)
        except KeyError as missing:
            raise ToolError(f"the workflow's {where} needs argument {missing}; call again with it") from None
        try:
            check_arguments(where, step.service, kwargs, set(), spec.allowed_commands, spec.commands_text)
            named = change_devices(kwargs) if step.service == "nornir" else []
        except ValueError as error:
            raise ToolError(f"workflow {spec.definition.file}: {error}") from None
        if step.service == "nornir" and not named:
            raise ToolError(
                f"workflow {spec.definition.file}: {where} must name its devices ({' or '.join(EXACT_FILTERS)})"
            )
        devices += named
        workflow[step.name] = sent_step(data[step.name], step, kwargs, timeout)
    return workflow, sha, sorted(set(devices))


def sent_step(original: Dict[str, Any], step: Step, kwargs: Dict[str, Any], timeout: float) -> Dict[str, Any]:
    """One step as the workflow service gets it: the file's step, filled in, its timeout capped."""
    sent: Dict[str, Any] = {"service": step.service, "task": step.task, "workers": step.workers, "kwargs": kwargs}
    sent["timeout"] = int(max(1, min(step.timeout or timeout, timeout)))
    sent.update({key: original[key] for key in ("stop_on_failure", *RUN_IF) if key in original})
    return sent


def render(
    spec: WorkflowSpec, uuid: Optional[str], reply: Any, sha: str, secrets: List[str]
) -> Tuple[str, str, Optional[str], List[Tuple[str, Any]]]:
    """What the model reads of a workflow run: each step's outcome and job UUID; and the steps' replies.

    NorFab's workflow service does not mark its own result failed when a
    step fails, so the steps decide.
    """
    result = next(iter((reply or {}).values()), None) if reply else None
    if not result:
        raise ToolError(
            f"job {uuid} for workflow.run got no reply: no workflow worker matched '{spec.target.workers}' or it timed out"
        )
    errors = list(redact(result.get("errors") or [], secrets))
    steps: Dict[str, Any] = {}
    replies: List[Tuple[str, Any]] = []
    runs: Any = next(iter((result.get("result") or {}).values()), {}) if isinstance(result.get("result"), dict) else {}
    for name, workers in (runs or {}).items():
        replies.append((name, workers))
        for worker, outcome in (workers or {}).items():
            entry = {
                "worker": worker,
                "task": f"{outcome.get('service')}.{str(outcome.get('task') or '').split(':')[-1]}",
                "status": outcome.get("status"),
                "failed": bool(outcome.get("failed")),
                "job_uuid": outcome.get("juuid"),
            }
            if outcome.get("errors"):
                entry["errors"] = redact(outcome["errors"], secrets)
            if outcome.get("failed") or outcome.get("status") in ("error", "failed", "timeout"):
                errors.append(
                    f"step {name} on {worker}: {'; '.join(entry.get('errors') or [str(outcome.get('status'))])}"
                )
            if outcome.get("result") is not None:
                entry["result"] = redact(outcome["result"], secrets)
            steps.setdefault(name, []).append(entry)
    payload = {
        "ok": not errors and not result.get("failed"),
        "tool": spec.name,
        "task": "workflow.run",
        "job_uuid": uuid,
        "workflow": {"file": spec.definition.file, "sha256": sha},
        "collected_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "steps": steps,
    }
    error = "; ".join(errors or ["the workflow failed"]) if errors or result.get("failed") else None
    if error:
        payload["error"] = error
    return json.dumps(payload, default=str), "completed" if payload["ok"] else "failed", error, replies
