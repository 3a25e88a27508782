"""
The machinery every NorFab-bound tool call shares, whatever its kind: the
model's arguments checked and turned into task kwargs (``prepare``), the
call's timeout inside the run's budget, the job sent through the worker's
own NFPClient and followed to its reply (``dispatch``, at most
``per_target`` calls in flight to one target), every reply kept as evidence
(``keep``), and results bounded (``bound``). The plain NorFab tool
(``kinds.NorfabCalls``), the change envelope (``change.ChangeRunner``) and
its checks all call through one ``Dispatcher``.
"""

import json
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Protocol, Set, Tuple, Union

import jsonschema

from ...models import NorfabToolTarget
from ...norfab_compat import forget_job, job_pending, tool_job_uuid
from ...safety import commands, guards, tool_class
from ...safety.redact import scrub
from ..evidence import capture
from ..evidence.store import EvidenceStore
from .calls import CallTrace, ToolError, ToolRun
from .schemas import is_open, task_arguments_problem
from .specs import JobTarget, ToolSpec

MIN_CALL_SECONDS = 1.0  # a call needs at least this much of the run budget left


def child_job_timeout(seconds: float) -> int:
    """The NorFab job timeout for a tool call that may take ``seconds``.

    nornir's cli task sets device read timeouts to 0.9 x the job timeout and
    rejects fractions, so job timeouts go out in tens of seconds; the tool
    still stops waiting at its own, exact deadline.
    """
    return max(10, int(seconds) // 10 * 10)


def run_job_uuid(run: ToolRun) -> str:
    """The UUID of a job ``run`` sends: it names the run, the agent and on whose behalf it runs."""
    operator = run.client or (f"schedule-{run.schedule_id}" if run.schedule_id else None)
    return tool_job_uuid(run.run_id, run.agent, operator)


class Named(Protocol):
    """What a call's evidence is filed under: its tool name, and where it went."""

    name: str

    def where(self) -> Tuple[Any, Any, Any]: ...


class Callee(Named, Protocol):
    """What a job is sent for: a NorFab tool, a workflow, or one of a change's own jobs (``checks.StepCall``)."""

    @property
    def target(self) -> Union[NorfabToolTarget, JobTarget]: ...


class Dispatcher:
    """
    Args:
        client: the worker's NFPClient.
        max_chars: results longer than this are cut and marked.
        per_target: calls in flight at once to one target (service and workers).
        secrets: the secrets to scrub from what a call shows.
        evidence: keeps every reply a call receives as artifacts (``evidence.store``); None keeps none.
    """

    def __init__(
        self,
        client: Any,
        max_chars: int,
        per_target: int,
        secrets: Callable[[], List[str]] = lambda: [],
        evidence: Optional[EvidenceStore] = None,
    ) -> None:
        self.client = client
        self.max_chars = max_chars
        self.per_target = per_target
        self.secrets = secrets
        self.evidence = evidence
        self._targets: Dict[str, threading.BoundedSemaphore] = {}
        self._lock = threading.Lock()

    def keep(self, spec: Named, run: ToolRun, trace: CallTrace, pieces: List[capture.Piece]) -> List[Any]:
        """Keep what a call received as evidence, listed on the run; nothing when the worker keeps none."""
        if self.evidence is None or not pieces:
            return []
        service, task, _ = spec.where()
        task = f"{service}.{task}"
        kept = self.evidence.keep_run(run, spec.name, task, trace.job_uuid, pieces, trace.approved_by)
        run.artifacts.extend(kept)
        return kept

    # ------------------------------------------------------------- arguments

    def validate(self, spec: Any, arguments: Dict[str, Any], fixed_names: Set[str]) -> None:
        """The model's arguments against the tool: available, an object, nothing fixed or guarded, the schema."""
        if spec.error:
            raise ToolError(f"tool {spec.name} is unavailable: {spec.error}")
        if not isinstance(arguments, dict):
            raise ToolError("arguments must be a JSON object")
        fixed = sorted(set(arguments) & fixed_names)
        if fixed:
            raise ToolError(
                f"argument(s) {', '.join(fixed)} are fixed by the tool definition and cannot be set; call again without them"
            )
        refused = guards.refused_names(arguments)
        if refused:
            raise ToolError(
                f"argument(s) {', '.join(refused)} are never accepted from a model; call again without them"
            )
        declared = set((spec.parameters or {}).get("properties") or {})
        unknown = sorted(set(arguments) - declared)
        if unknown and not is_open(spec.parameters or {}):
            raise ToolError(
                f"argument(s) {', '.join(unknown)} are not arguments of this tool "
                f"(it takes: {', '.join(sorted(declared)) or 'none'}); call again without them"
            )
        try:
            jsonschema.validate(arguments, spec.parameters or {"type": "object"})
        except jsonschema.ValidationError as error:
            path = ".".join(str(p) for p in error.absolute_path) or "arguments"
            raise ToolError(
                f"invalid arguments ({path}): {error.message}; call again with arguments matching the schema"
            ) from None

    def prepare(self, spec: ToolSpec, arguments: Dict[str, Any]) -> Dict[str, Any]:
        """Validate the model's arguments and build the task kwargs."""
        target = spec.target
        self.validate(spec, arguments, set(target.kwargs) | {"workers"})
        definition = spec.definition
        spliced = {k: arguments[k] for k in target.job_data if k in arguments}
        try:
            guards.check_values(arguments, definition.allow_files, definition.allow_multiline)
            commands.check_commands(arguments, spec.allowed_commands, spec.commands_text)
            if not spec.changes:  # a read-only tool sends read-only forms, whatever its allow-list admits
                commands.check_commands(arguments, tool_class.READ_ONLY_FORMS, commands.READ_ONLY_SUMMARY)
            # job_data values are spliced into command templates: a line break would add a command
            guards.check_values(spliced, definition.allow_files)
            commands.check_spliced(spliced)
        except ValueError as error:
            raise ToolError(str(error)) from None
        kwargs = {k: v for k, v in arguments.items() if k not in target.job_data}
        kwargs.update(target.kwargs)
        if spliced:
            fixed_data = target.kwargs.get("job_data")
            if fixed_data is not None and not isinstance(fixed_data, dict):
                raise ToolError("the tool definition fixes job_data to a file; it cannot take arguments")
            kwargs["job_data"] = {**spliced, **(fixed_data or {})}
        problem = task_arguments_problem(spec.task_schema, kwargs, complete=True)
        if problem:
            where = f"{target.service}.{target.task}"
            raise ToolError(f"the arguments do not fit {where} ({problem}); the call was not made")
        return kwargs

    def call_timeout(self, spec: Callee, run: ToolRun) -> float:
        timeout = min(spec.target.timeout, run.remaining() - MIN_CALL_SECONDS)
        if timeout < MIN_CALL_SECONDS:
            raise ToolError("the run's time budget is spent; no time left for another tool call")
        return timeout

    # -------------------------------------------------------------- dispatch

    def _semaphore(self, spec: Callee) -> threading.BoundedSemaphore:
        key = f"{spec.target.service}/{json.dumps(spec.target.workers)}"
        with self._lock:
            return self._targets.setdefault(key, threading.BoundedSemaphore(self.per_target))

    def dispatch(
        self,
        spec: Callee,
        kwargs: Dict[str, Any],
        timeout: float,
        run: ToolRun,
        interrupted: Callable[[], bool],
        trace: CallTrace,
        uuid: Optional[str] = None,
    ) -> Any:
        """Submit the job (with ``uuid`` when the caller recorded it first) and follow it to its reply."""
        target = spec.target
        deadline = time.time() + timeout
        # concurrent jobs to one nornir worker can come back empty; queue them
        semaphore = self._semaphore(spec)
        while not semaphore.acquire(timeout=0.2):
            if interrupted():
                raise ToolError("the run was interrupted before the call was made")
            if time.time() > deadline:
                raise ToolError(
                    f"waited {timeout:.0f}s for other calls to {target.service} to finish; the call was not made"
                )
        try:
            future = self.client.submit_job(
                target.service,
                target.task,
                uuid=uuid or run_job_uuid(run),
                kwargs=kwargs,
                workers=target.workers,
                timeout=child_job_timeout(deadline - time.time()),
            )
            if future is None:
                raise ToolError(f"NorFab did not accept the job for {target.service}.{target.task}")
            trace.job_uuid = future.uuid
            while not future.done_event.is_set() and time.time() < deadline:
                for event in future.events(timeout=0.2):
                    if event.get("event_type") == "progress" and event.get("message") not in (None, "", "starting"):
                        message = scrub(str(event["message"]), self.secrets())
                        run.event(f"tool {spec.name}: {message}", resource=event.get("resource") or [])
                if interrupted():
                    raise ToolError(f"the run was interrupted while job {future.uuid} was running")
            reply = future.result(timeout=0.5)
            trace.artifacts += self.keep(
                spec, run, trace, capture.pieces(target.service, target.task, reply, self.secrets())
            )
            return reply
        finally:
            semaphore.release()
            if trace.job_uuid:
                forget_job(self.client, trace.job_uuid)

    def job_pending(self, service: str, uuid: str) -> Optional[bool]:
        """Whether job ``uuid`` still runs on a worker of ``service``; None when not every worker answered."""
        return job_pending(self.client, service, uuid)

    def bound(self, text: str) -> Tuple[str, bool]:
        if len(text) <= self.max_chars:
            return text, False
        note = f"\n[truncated: showing {self.max_chars} of {len(text)} characters; narrow the request to see the rest]"
        return text[: self.max_chars] + note, True
