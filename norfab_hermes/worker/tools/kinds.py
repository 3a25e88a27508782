"""
The kinds of tool an agent calls, each behind one protocol: given the spec,
the model's arguments, the run, its interrupt and the call's trace, return
the text the model reads, the call's status and its error. The host
registers one executor per kind (``ToolRunner(dispatcher, kinds)``); a spec
names its kind (``spec.kind``). Adding a kind is its spec, its executor and
one line of that registration.
"""

import json
from typing import Any, Callable, Dict, Optional, Protocol, Tuple

from ..approvals.approver import Approver
from ..evidence import capture
from .calls import CallTrace, ToolRun, approved
from .delegation import Delegator
from .dispatch import Dispatcher
from .replies import devices_in, render
from .specs import DelegateSpec, ToolSpec

Outcome = Tuple[str, str, Optional[str]]  # the text the model reads, the call's status, its error


class ToolKind(Protocol):
    def call(
        self, spec: Any, arguments: Dict[str, Any], run: ToolRun, interrupted: Callable[[], bool], trace: CallTrace
    ) -> Outcome:
        """Make one call of this kind; raise ToolError for a refusal or a failure the model should read."""


class NorfabCalls:
    """A NorFab tool that changes nothing: checked, approved where its definition asks, sent, rendered."""

    def __init__(self, dispatcher: Dispatcher, approver: Approver) -> None:
        self.dispatcher = dispatcher
        self.approver = approver

    def call(
        self, spec: ToolSpec, arguments: Dict[str, Any], run: ToolRun, interrupted: Callable[[], bool], trace: CallTrace
    ) -> Outcome:
        kwargs = self.dispatcher.prepare(spec, arguments)
        timeout = self.dispatcher.call_timeout(spec, run)
        trace.approved_by = approved(self.approver.approve(spec, arguments, run))
        target = spec.target
        run.event(f"tool {spec.name} calling {target.service}.{target.task}", resource=[spec.name])
        reply = self.dispatcher.dispatch(spec, kwargs, timeout, run, interrupted, trace)
        if target.service == "nornir":
            run.touched(devices_in(reply))
        kept = [a.artifact_id for a in trace.artifacts]
        return render(spec, trace.job_uuid, reply, arguments, self.dispatcher.secrets(), run.started, kept)


class DelegateCalls:
    """A delegate's question to another agent; its answer kept as evidence like any reply."""

    def __init__(self, delegator: Delegator, dispatcher: Dispatcher) -> None:
        self.delegator = delegator
        self.dispatcher = dispatcher

    def call(
        self,
        spec: DelegateSpec,
        arguments: Dict[str, Any],
        run: ToolRun,
        interrupted: Callable[[], bool],
        trace: CallTrace,
    ) -> Outcome:
        text, status, error = self.delegator.ask(spec, arguments, run, interrupted, trace)
        answer = capture.answer_piece(spec.definition.workers, spec.definition.agent, _response(text))
        trace.artifacts += self.dispatcher.keep(spec, run, trace, [answer])
        return text, status, error


def _response(text: str) -> str:
    """A delegate's answer from the text the model reads."""
    try:
        return str(json.loads(text).get("response") or "")
    except (ValueError, AttributeError):
        return ""
