"""
What a workflow file an agent may run must hold.

NorFab's workflow service runs any task with any arguments, past every
tool guard, so ``workflow`` is never a tool target. A workflow *tool* pins
one reviewed file, and every step of that file passes the checks a model's
tool call passes: no forbidden service, task or target (a nested workflow
included), no guarded argument, no template syntax, file name or line
break, commands only as the tool's allow-list permits, and devices named
exactly (``FB`` or ``FL``). The model fills in only the tool's declared
variables, as ``${name}`` in the file.

Pure data and checks: imported by the worker's workflow tools.
"""

import re
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Set, Union

from . import commands, guards
from .changes import EXACT_FILTERS, HOST_FILTERS, placeholders

WORKFLOW_KEYS = {"name": str, "description": str, "remove_no_match_results": bool}
RUN_IF = ("run_if_fail_any", "run_if_pass_any", "run_if_fail_all", "run_if_pass_all")
STEP_KEYS = {"service", "task", "workers", "kwargs", "timeout", "stop_on_failure", *RUN_IF}


@dataclass(frozen=True)
class Step:
    """One step of a workflow file: a NorFab task the workflow service runs."""

    name: str
    service: str
    task: str
    workers: Union[str, List[str]]
    kwargs: Dict[str, Any]
    timeout: Optional[float]


def check_workflow(data: Any, variables: Set[str], allowed: List["re.Pattern[str]"], described: str) -> List[Step]:
    """The steps of a workflow file, every one checked; ValueError names the step and what to fix."""
    if not isinstance(data, dict):
        raise ValueError("a workflow file must be a mapping: name, description and the steps by name")
    steps = []
    for key, value in data.items():
        if key in WORKFLOW_KEYS:
            if not isinstance(value, WORKFLOW_KEYS[key]):
                raise ValueError(f"'{key}' must be a {WORKFLOW_KEYS[key].__name__}")
            continue
        steps.append(check_step(str(key), value, variables, allowed, described))
    if not steps:
        raise ValueError("the workflow has no steps")
    return steps


def check_step(name: str, data: Any, variables: Set[str], allowed: List["re.Pattern[str]"], described: str) -> Step:
    where = f"step '{name}'"
    if not isinstance(data, dict):
        raise ValueError(f"{where} must be a mapping with service, task and kwargs")
    unknown = sorted(set(data) - STEP_KEYS)
    if unknown:
        raise ValueError(f"{where}: {', '.join(unknown)} not allowed (a step takes {', '.join(sorted(STEP_KEYS))})")
    service, task = data.get("service"), data.get("task")
    if not isinstance(service, str) or not isinstance(task, str):
        raise ValueError(f"{where} must name its service and task")
    reason = guards.forbidden_target(service, task)
    if reason:
        raise ValueError(f"{where}: {reason}")
    workers = data.get("workers", "all")
    if not (isinstance(workers, str) or (isinstance(workers, list) and all(isinstance(w, str) for w in workers))):
        raise ValueError(f"{where}: workers must be a worker name, any, all or a list of names")
    timeout = data.get("timeout")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0):
        raise ValueError(f"{where}: timeout must be a positive number of seconds")
    for condition in RUN_IF:
        if not isinstance(data.get(condition, []), list):
            raise ValueError(f"{where}: {condition} must list earlier steps")
    kwargs = data.get("kwargs", {})
    if not isinstance(kwargs, dict):
        raise ValueError(f"{where}: kwargs must be a mapping of task arguments")
    check_arguments(where, service, kwargs, variables, allowed, described)
    if placeholders(workers) or placeholders(data.get("service")) or placeholders(data.get("task")):
        raise ValueError(f"{where}: service, task and workers are fixed by the file; only kwargs take variables")
    return Step(name, service, task, workers, kwargs, timeout)


def check_arguments(
    where: str,
    service: str,
    kwargs: Dict[str, Any],
    variables: Set[str],
    allowed: List["re.Pattern[str]"],
    described: str,
) -> None:
    """A step's arguments pass the guards of a model's tool call (commands: those without variables)."""
    refused = guards.refused_names(kwargs)
    if refused:
        raise ValueError(f"{where}: argument(s) {', '.join(refused)} are not allowed in a workflow an agent runs")
    undeclared = sorted(placeholders(kwargs) - variables)
    if undeclared:
        raise ValueError(
            f"{where}: {', '.join('${' + v + '}' for v in undeclared)} not declared in the tool's input_schema"
        )
    try:
        guards.check_values(kwargs)
        commands.check_commands(without_variables(kwargs), allowed, described)
    except ValueError as error:
        raise ValueError(f"{where}: {error}") from None
    if service == "nornir":
        patterns = sorted(k for k in kwargs if k in HOST_FILTERS and k not in EXACT_FILTERS)
        if patterns:
            raise ValueError(f"{where}: a step names its devices with FB or FL only, not {', '.join(patterns)}")


def without_variables(kwargs: Dict[str, Any]) -> Dict[str, Any]:
    """Command arguments without the commands that take variables (checked once they are filled in)."""
    names = commands.command_arguments(kwargs)
    fixed: Dict[str, Any] = {}
    for name in names:
        value = kwargs[name]
        items = value if isinstance(value, list) else [value]
        fixed[name] = [item for item in items if not placeholders(item)]
    return fixed
