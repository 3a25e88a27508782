"""
Running an agent's tool calls: one path for every kind of tool.

:class:`ToolRunner` counts a call against the run's budget, hands it to the
executor of its spec's ``kind`` (``kinds``: a NorFab tool, a change inside
the envelope, a delegate's question, a records read), bounds the text the
model reads, and records the call on the run with an event. Every failure is
a tool error the model sees; nothing here raises into Hermes.
"""

import json
import time
from typing import Any, Callable, Dict, Optional

from ...models import ToolCallSummary, arguments_digest
from ...safety.redact import scrub
from .calls import CallTrace, ToolError, ToolRun
from .dispatch import Dispatcher
from .kinds import ToolKind
from .specs import AnySpec


class ToolRunner:
    """Executes the tool calls of one worker's agents.

    Args:
        dispatcher: the NorFab machinery the kinds share (bounding and secrets here).
        kinds: the executor of each spec kind (``spec.kind``), registered by the host.
    """

    def __init__(self, dispatcher: Dispatcher, kinds: Dict[str, ToolKind]) -> None:
        self.dispatcher = dispatcher
        self.kinds = kinds

    def call(
        self, spec: AnySpec, arguments: Dict[str, Any], run: Optional[ToolRun], interrupted: Callable[[], bool]
    ) -> str:
        """Run one call (a NorFab tool, a delegate or a records tool) and return the text the model reads."""
        if run is None:  # a turn no NorFab run started: no budget holds it, so it gets no network
            message = "tools run only inside a run started through NorFab (invoke, start_run or a schedule); the call was not made"
            return json.dumps({"ok": False, "error": message, "tool": spec.name, "job_uuid": None})
        started = time.time()
        digest = arguments_digest(arguments)
        trace = CallTrace()
        try:
            refusal = run.admit_tool_call(spec.name, digest)
            if refusal:
                raise ToolError(f"{refusal}; the call was not made")
            text, status, error = self.kinds[spec.kind].call(spec, arguments, run, interrupted, trace)
        except ToolError as refused:
            error = scrub(str(refused), self.dispatcher.secrets())
            text = json.dumps({"ok": False, "error": error, "tool": spec.name, "job_uuid": trace.job_uuid})
            status = "failed" if trace.job_uuid else "refused"
        text, truncated = self.dispatcher.bound(text)
        service, task, workers = spec.where()
        summary = ToolCallSummary(
            tool=spec.name,
            service=service,
            task=task,
            workers=workers,
            arguments_digest=digest,
            job_uuid=trace.job_uuid,
            status=status,
            duration=round(time.time() - started, 3),
            truncated=truncated,
            error=error,
            delegated=trace.delegated.record() if trace.delegated else None,
            change=trace.change,
        )
        run.record_tool_call(summary)
        run.event(
            f"tool {spec.name} {summary.status}"
            + (f": {summary.error}" if summary.error else "")
            + (f", job {summary.job_uuid}" if summary.job_uuid else ""),
            resource=[spec.name],
            severity="WARNING" if summary.status != "completed" else "INFO",
            extras={"tool_call": summary.model_dump()},
        )
        return text
