"""
What a change call sends, built from the model's arguments: the task arguments and the devices
they name (a workflow's file filled in), the digest an operator approves, the rollback's call,
and what the operator reads of a workflow above its preview.
"""

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

from ...models import WorkflowDefinition
from ...safety import commands, guards
from ...safety.changes import EXACT_FILTERS, change_devices, change_digest, substitute
from . import workflow
from .calls import ToolError
from .checks import ChangeCall
from .dispatch import Dispatcher
from .specs import WorkflowSpec


@dataclass
class Built:
    """A change as a call builds it: the task arguments that would be sent and the devices they name."""

    kwargs: Dict[str, Any]  # a workflow's: {"workflow": the workflow itself}
    devices: List[str]
    sha256: Optional[str] = None  # a workflow file's


def build(dispatcher: Dispatcher, call: ChangeCall) -> Built:
    """The task arguments a change call would send now, and the devices they name; ToolError says why not."""
    spec, arguments = call.spec, call.arguments
    if isinstance(spec, WorkflowSpec):
        dispatcher.validate(spec, arguments, {"workers"})
        flow, sha, devices = workflow.build(spec, dispatcher.client, arguments, spec.target.timeout)
        return Built({"workflow": flow}, devices, sha)
    kwargs = dispatcher.prepare(spec, arguments)
    try:
        devices = change_devices(kwargs)
    except ValueError as error:
        raise ToolError(f"{error}; the call was not made") from None
    if spec.target.service == "nornir" and not devices:
        raise ToolError(f"a change names its devices ({' or '.join(EXACT_FILTERS)}); the call was not made")
    return Built(kwargs, devices)


def digest(call: ChangeCall, built: Built, preview: Dict[str, str]) -> str:
    """The digest of the change an operator approves: agent, tool, target, task arguments, devices, preview."""
    spec = call.spec
    change = {"agent": spec.agent, "tool": spec.name, "target": list(spec.where()), "kwargs": built.kwargs}
    return change_digest({**change, "devices": built.devices, "preview": preview})


def rollback_call(dispatcher: Dispatcher, call: ChangeCall, built: Built) -> Tuple[Any, Built, Dict[str, str]]:
    """Where the rollback goes, what it sends, and what the operator is shown per device."""
    spec, arguments = call.spec, call.arguments
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
        flow, sha, devices = workflow.build(undo, dispatcher.client, arguments, spec.target.timeout)
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


def header(built: Built) -> str:
    """What the operator reads of a workflow above its preview: the file's digest and the steps it runs."""
    if not built.sha256:
        return ""
    flow = built.kwargs["workflow"]
    steps = [f"{name} {step['service']}.{step['task']}" for name, step in flow.items() if isinstance(step, dict)]
    return f" by workflow {flow.get('name')} (sha256 {built.sha256[:16]}; steps: {', '.join(steps)})"


def rollback_argument(spec: Any) -> str:
    """The argument the change tool sends its commands with: rollback commands go there."""
    names = commands.command_arguments(set(spec.target.kwargs) | set((spec.parameters or {}).get("properties") or {}))
    return names[0] if names else ("config" if spec.target.task == "cfg" else "commands")
