"""
Delegation: an agent asks another agent, on one named hermes worker, through NorFab.

A delegate is its own kind of tool, never a NorFab tool (the ``hermes``
service stays forbidden as a tool target). A question goes to ``hermes.invoke``
of exactly the agent and worker the definition names, and is bounded:

- budget: the asked run gets the caller's remaining budget less ``MARGIN``
  (never more), so it ends, and its answer arrives, before the caller's deadline;
- depth and cycles: every delegated run carries its lineage (the runs above
  it, first run first); a question that would go deeper than the delegating
  agent's ``max_delegation_depth``, or back to an agent already in the
  lineage, is refused before anything is sent (the asked worker checks too);
- interrupts: a caller that is interrupted or stops interrupts the asked run
  on its worker and takes its partial answer;
- the operator: the asked run is interactive only when the caller's is; its
  questions are relayed to the caller's operator, answers relayed back;
- the case: the asked run carries the caller's case_id.

The asked run's progress shows in the caller's events; its ids, worker and
stop reason go into the caller's tool call summary.
"""

import json
import logging
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

from ...errors import InventoryError
from ...identity.client import signed
from ...identity.signatures import SignatureError, signer_for
from ...models import DelegatedRun, Lineage
from ...norfab_compat import forget_job
from ...safety.redact import scrub
from .calls import CallTrace, ToolError, ToolRun
from .specs import QUESTION_CHARS, DelegateSpec

log = logging.getLogger(__name__)

MARGIN = 10.0  # seconds of the caller's budget kept back: the asked run winds down and its answer travels
MIN_BUDGET = 5.0  # seconds an asked run needs at the least
JOB_SLACK = 5  # seconds between the asked run's budget and its NorFab job timeout
WIND_DOWN = 8.0  # seconds an interrupted asked run gets to send its partial answer
INTERRUPT_TIMEOUT = 10


def delegation_signer(inventory: Any) -> Any:
    """The signer of the worker's own key (``delegation_key``), or None; InventoryError when it cannot sign."""
    if not inventory.delegation_key:
        return None
    try:
        return signer_for(Path(inventory.delegation_key))[0]
    except (SignatureError, OSError) as error:
        raise InventoryError(f"delegation_key: {error}") from None


@dataclass
class Child:
    """The asked run of one delegate call, as far as the asking worker knows it."""

    agent: str
    worker: str
    run_id: Optional[str] = None
    session_id: Optional[str] = None
    stop_reason: Optional[str] = None

    def record(self) -> DelegatedRun:
        return DelegatedRun(
            agent=self.agent,
            worker=self.worker,
            run_id=self.run_id,
            session_id=self.session_id,
            stop_reason=self.stop_reason,
        )


class Delegator:
    """Asks other agents on behalf of the runs of one worker."""

    def __init__(self, client: Any, worker_name: str, secrets: Callable[[], List[str]], signer: Any = None) -> None:
        self.client = client
        self.worker_name = worker_name
        self.secrets = secrets
        self.signer = signer  # the worker's own key (delegation_key): signs what it asks other workers

    def submit(self, task: str, worker: str, kwargs: Dict[str, Any], timeout: float) -> Any:
        """A hermes job to one worker, signed with the worker's own key when it has one."""
        kwargs = signed(self.signer, self.client.name, task, [worker], kwargs)
        return self.client.submit_job("hermes", task, kwargs=kwargs, workers=[worker], timeout=timeout)

    def ask(
        self,
        spec: DelegateSpec,
        arguments: Dict[str, Any],
        run: ToolRun,
        interrupted: Callable[[], bool],
        trace: CallTrace,
    ) -> Tuple[str, str, Optional[str]]:
        """Ask the delegate's agent; the text the model reads, the call's status and error."""
        question = self._question(arguments)
        target = spec.definition
        lineage = self.lineage(run, spec)
        budget = self.budget(spec, run)
        run.event(f"delegate {spec.name} asking agent '{target.agent}' on {target.workers}", resource=[spec.name])
        future = self.submit(
            "invoke",
            target.workers,
            {
                "agent": target.agent,
                "instructions": question,
                "run_timeout": budget,
                "interactive": bool(run.interactive),
                "lineage": lineage.model_dump(),
                "case_id": run.case_id,  # the asked run works on the same case
            },
            math.ceil(budget) + JOB_SLACK,
        )
        if future is None:
            raise ToolError(f"NorFab did not accept the question for agent '{target.agent}' on {target.workers}")
        trace.job_uuid = future.uuid
        trace.delegated = child = Child(agent=target.agent, worker=target.workers)
        try:
            reply = self._follow(spec, future, run, interrupted, child, time.time() + budget + WIND_DOWN)
        finally:
            forget_job(self.client, future.uuid)
        return self._render(spec, reply, child)

    @staticmethod
    def _question(arguments: Any) -> str:
        if not isinstance(arguments, dict) or set(arguments) != {"question"}:
            raise ToolError('a delegate takes exactly one argument, question; call again with {"question": "..."}')
        question = arguments["question"]
        if not isinstance(question, str) or not question.strip() or len(question) > QUESTION_CHARS:
            raise ToolError(f"question must be text of 1 to {QUESTION_CHARS} characters; call again")
        if question.lstrip().startswith("/"):
            raise ToolError("question must not start with '/': it would run as a slash command; call again in words")
        return question

    def lineage(self, run: ToolRun, spec: DelegateSpec) -> Lineage:
        """The asked run's lineage; a cycle or a chain deeper than the agent allows is refused."""
        target = spec.definition
        above = run.lineage
        chain = (above.chain if above else []) + [f"{run.agent}@{self.worker_name}"]
        asked = f"{target.agent}@{target.workers}"
        if asked in chain:
            raise ToolError(
                f"asking {asked} would go round in a circle ({' -> '.join(chain + [asked])}): it is already working "
                "on this request; the call was not made; answer with what you have"
            )
        if len(chain) > spec.max_depth:
            raise ToolError(
                f"delegation depth limit reached: this run is {len(chain) - 1} deep and agent '{run.agent}' allows "
                f"{spec.max_depth} (max_delegation_depth); the call was not made; answer with your own tools"
            )
        return Lineage(
            parent_run_id=run.run_id,
            root_run_id=above.root_run_id if above else run.run_id,
            depth=len(chain),
            chain=chain,
        )

    @staticmethod
    def budget(spec: DelegateSpec, run: ToolRun) -> float:
        """Seconds the asked run gets: the caller's remaining budget less MARGIN, capped by the delegate's timeout."""
        budget = run.remaining() - MARGIN
        if spec.definition.timeout:
            budget = min(budget, spec.definition.timeout)
        if budget < MIN_BUDGET:
            raise ToolError(
                f"only {run.remaining():.0f}s of this run's budget are left, too little to ask agent "
                f"'{spec.definition.agent}' (it needs {MIN_BUDGET + MARGIN:.0f}s); answer with what you have"
            )
        return round(budget, 1)

    def _follow(
        self,
        spec: DelegateSpec,
        future: Any,
        run: ToolRun,
        interrupted: Callable[[], bool],
        child: Child,
        give_up: float,
    ) -> Any:
        """Relay the asked run's events and questions until it answers; interrupt it when the caller stops."""
        stop_asked: Optional[float] = None
        interrupt_sent = False
        while not future.done_event.is_set():
            for event in future.events(timeout=0.2):
                self._relay(spec, future, run, child, event)
                if stop_asked is None and (interrupted() or run.stop_reason is not None):
                    break
            if stop_asked is None and (interrupted() or run.stop_reason is not None or time.time() > give_up):
                stop_asked = time.time()
                run.event(
                    f"delegate {spec.name} stopping the run of agent '{child.agent}' on {child.worker}",
                    severity="WARNING",
                )
            if stop_asked is not None:
                if not interrupt_sent and child.run_id:
                    interrupt_sent = True
                    self._interrupt(child)
                if time.time() - stop_asked > WIND_DOWN:
                    break
        return future.result(timeout=0.5)

    def _relay(self, spec: DelegateSpec, future: Any, run: ToolRun, child: Child, event: Dict[str, Any]) -> None:
        extras = event.get("extras") or {}
        if event.get("event_type") == "input_request" and extras.get("input_request"):
            self._relay_question(spec, future, run, child, extras["input_request"])
            return
        if event.get("event_type") != "progress" or event.get("task") not in (None, "invoke"):
            return
        child.run_id = child.run_id or extras.get("run_id")
        child.session_id = child.session_id or extras.get("session_id")
        message = event.get("message")
        if message not in (None, "", "starting"):
            # the asked run's own events, named by who said them (nested delegations nest the names)
            text = scrub(str(message), self.secrets())
            run.event(f"{child.agent}@{child.worker}: {text}", resource=event.get("resource") or [])

    def _relay_question(
        self, spec: DelegateSpec, future: Any, run: ToolRun, child: Child, request: Dict[str, Any]
    ) -> None:
        """The asked run wants its operator: the caller's operator answers, or the question is cancelled."""
        answer, cancel = None, True
        wait = int(min(float(request.get("timeout") or 0), run.remaining()))
        if run.interactive and run.job is not None and wait >= 1:
            try:
                answer = run.job.request_input(
                    question=f"[{child.agent} on {child.worker}, asked by {run.agent}] {request.get('question')}",
                    default=request.get("default"),
                    timeout=wait,
                    # an approval's tool, arguments and preview travel with its question
                    metadata={
                        **(request.get("metadata") or {}),
                        "run_id": run.run_id,
                        "delegated_run_id": child.run_id,
                    },
                )
                cancel = False
            except Exception as error:  # no answer in time or cancelled: the asked run is told so
                log.debug(f"Delegated question of run {child.run_id} not answered: {error!r}")
        future.send_response(input_id=request.get("id"), value=answer, worker=child.worker, cancel=cancel)

    def _interrupt(self, child: Child) -> None:
        self._hermes(child.worker, "interrupt", agent=child.agent, run_id=child.run_id)

    def _hermes(self, worker: str, task: str, **kwargs: Any) -> Optional[Dict[str, Any]]:
        """One short hermes task on one worker: its result, or None when it failed or nobody answered."""
        future = self.submit(task, worker, kwargs, INTERRUPT_TIMEOUT)
        if future is None:
            return None
        try:
            answer = (future.result(timeout=INTERRUPT_TIMEOUT) or {}).get(worker) or {}
        finally:
            forget_job(self.client, future.uuid)
        return None if answer.get("failed") else answer.get("result")

    def confirm(self, lineage: Lineage, agent: str) -> Optional[str]:
        """Why the run a lineage names as the asker did not ask ``agent`` on this worker; None when it did.

        The asker's worker is asked: its run must be in flight and its
        agent must list this agent on this worker as a delegate.
        """
        parent_agent, parent_worker = lineage.chain[-1].rsplit("@", 1)
        run = self._hermes(parent_worker, "get_run", agent=parent_agent, run_id=lineage.parent_run_id)
        if not run:
            return f"run '{lineage.parent_run_id}' of agent '{parent_agent}' is not known on worker '{parent_worker}'"
        if run.get("state") == "finished":
            return f"run '{lineage.parent_run_id}' of agent '{parent_agent}' on worker '{parent_worker}' has finished"
        details = self._hermes(parent_worker, "get_agent", agent=parent_agent) or {}
        asked = [
            tool
            for tool in (details.get("tools") or {}).values()
            if tool.get("kind") == "delegate" and tool.get("agent") == agent and tool.get("workers") == self.worker_name
        ]
        if not asked:
            return f"agent '{parent_agent}' on worker '{parent_worker}' has no delegate for agent '{agent}' on worker '{self.worker_name}'"
        return None

    def _render(self, spec: DelegateSpec, reply: Any, child: Child) -> Tuple[str, str, Optional[str]]:
        where = f"agent '{child.agent}' on {child.worker}"
        answer = (reply or {}).get(child.worker)
        if not answer:
            raise ToolError(
                f"{where} did not answer (is that worker up? nf# hermes status); the question may be unanswered"
            )
        if answer.get("failed") or not isinstance(answer.get("result"), dict):
            errors = "; ".join(str(e) for e in answer.get("errors") or [answer.get("status") or "no result"])
            raise ToolError(f"{where} could not take the question: {errors}")
        result = answer["result"]
        child.run_id = result.get("run_id") or child.run_id
        child.session_id = result.get("session_id") or child.session_id
        child.stop_reason = result.get("stop_reason")
        ok = child.stop_reason == "completed"
        payload = {
            "ok": ok,
            "tool": spec.name,
            "agent": child.agent,
            "worker": child.worker,
            "run_id": child.run_id,
            "session_id": child.session_id,
            "stop_reason": child.stop_reason,
            "response": scrub(str(result.get("response") or ""), self.secrets()),
        }
        error = None if ok else f"{where} stopped without finishing: {child.stop_reason}"
        if error:
            payload["error"] = error
        return json.dumps(payload), "completed" if ok else "failed", error
