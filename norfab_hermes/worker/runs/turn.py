"""
One gateway turn of a run: hand the text to the agent's NorFab adapter, wait
for the turn while enforcing the run's budgets and interrupts, and build the
run's result envelope from what the gateway and Hermes reported.

NorFab has no job cancellation and Hermes reads its iteration budget from
one process-wide setting, so the wall-clock budget, interrupts and the
worker's shutdown are all enforced here, by interrupting the running agent.
"""

import concurrent.futures
import threading
import time
from typing import Any, List, Optional

from ...models import InvokeResultData, RunUsage, StopReason
from ...safety.redact import scrub
from ..hermes import metering
from ..hermes.records import TurnResult
from ..hermes.runtime import HermesRuntime
from .run import Run

POLL = 0.1  # seconds between budget checks of a waiting run
GRACE = 5.0  # seconds an interrupted turn gets to wind down


def wait(runtime: HermesRuntime, run: Run, text: str, stopping: threading.Event) -> Optional[Any]:
    """Run the turn within the run's budgets; None if it had to be abandoned."""
    runtime.gateway.take_turn_result(run.session_key)  # nothing left over from an earlier turn
    future = runtime.send(run.agent, text, run.chat_id, run.write_reply)
    interrupted_at = None
    while True:
        try:
            return future.result(POLL)
        except concurrent.futures.TimeoutError:
            pass
        if run.session_id is None:  # a new session: known once the gateway took the message
            run.session_id = runtime.gateway.key_session(run.session_key)
        run.check_clock()
        if stopping.is_set():
            run.stop(StopReason.interrupted.value, "worker shutting down")
        if run.stop_reason is None:
            continue
        agent = runtime.gateway.running_agent(run.session_key)
        if interrupted_at is None and agent is not None:
            # no message: the gateway would run an interrupt message as a follow-up turn
            agent.interrupt()
            interrupted_at = time.time()
            if run.stop_message not in run.warnings:  # a spent budget has said so already
                run.event(f"run {run.run_id} stopping: {run.stop_message}", severity="WARNING")
        if time.time() - (interrupted_at or run.budget.deadline) > GRACE:
            future.cancel()
            metering.abort_model_requests(run.session_key)
            run.warnings.append(f"turn did not stop within {GRACE:.0f}s of '{run.stop_message}'; abandoned")
            return None


def envelope(
    runtime: HermesRuntime, run: Run, turn: Optional[Any], worker: str, secrets: List[str]
) -> InvokeResultData:
    """The run's result: reply, ids, stop reason, tool calls, usage and warnings."""
    result = runtime.gateway.take_turn_result(run.session_key)
    run.stop(stop_reason(result, run.max_turns), "")
    if result.error or run.provider_errors:
        # the gateway keeps provider details out of the reply; the operator needs them
        run.warnings.append(provider_warning(run, result, secrets))
    session_id = result.session_id or runtime.gateway.key_session(run.session_key)
    sent = turn.reply if turn is not None else ""
    # the agent's own final text, except on a failed run: its final text is the provider's raw
    # error, and what the gateway sent the chat is a note without it (the warning has the details)
    response = (sent if result.error else result.final_response or sent) or ""
    return InvokeResultData(
        response=response,
        run_id=run.run_id,
        session_id=session_id,
        agent=run.agent,
        worker=worker,
        stop_reason=run.stop_reason,
        tool_calls=run.tool_calls,
        usage=RunUsage(
            api_calls=run.api_calls,  # every request the provider got for the run, as metered
            input_tokens=result.input_tokens,
            output_tokens=result.output_tokens,
            total_tokens=result.total_tokens,
            cost_usd=result.cost_usd,
        ),
        warnings=run.warnings,
        approvals=run.approval_infos(),
        lineage=run.lineage,
        artifacts=run.artifacts,
    )


def stop_reason(result: TurnResult, max_turns: int) -> str:
    """Map a Hermes turn result onto the closed set of stop reasons."""
    if result.interrupted:
        return StopReason.interrupted.value
    if result.error:  # Hermes returns early with the API error after its retries
        return StopReason.provider_error.value
    if result.completed is False and result.api_calls >= max_turns - 1:
        # the gateway's result has no exit reason: an incomplete turn that used its
        # whole tool loop (max_turns less the summary call) ran out of model calls
        return StopReason.max_turns.value
    if result.failed or not result.reported or result.completed is False:
        return StopReason.failed.value
    return StopReason.completed.value


def provider_warning(run: Run, result: TurnResult, secrets: List[str]) -> str:
    """What the provider answered and how often Hermes retried, secrets masked."""
    failures = run.provider_errors
    if not failures:
        return f"model provider error: {scrub(str(result.error), secrets)}"
    last = failures[-1]
    status = f"HTTP {last['status_code']}" if last.get("status_code") else "no HTTP status"
    retries = len(failures) - 1
    outcome = "the run stopped" if result.error else "a later attempt succeeded"
    return scrub(
        f"model provider error: {status} ({last.get('reason') or 'unknown'}): {last.get('message')}; "
        f"{len(failures)} failed request(s), {retries} retr{'y' if retries == 1 else 'ies'}; {outcome}",
        secrets,
    )
