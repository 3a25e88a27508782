"""
Running one job once, and collecting what it left, through the public hermes tasks.

The runner is the job's operator: it asks the agent through ``hermes.invoke``
(interactive), answers every approval request by the job's ``operator``
policy (anything not listed is denied), and times the run to its answer.
Then it reads what the model read: the session transcript (``get_session``)
holds every tool result, and each delegated run's session and result
(``get_session``, ``get_run`` on the asked worker) hold what the asked agent
read and spent.
"""

import json
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

from ..models import arguments_digest
from ..testing.scenario import Scenario
from ..testing.scripted_model import ScriptedModel
from .models import Job, LabSettings, RunData, ToolResult
from .report import write_run
from .scoring import Prices, RunScore, score

JOB_TIMEOUT = 600  # seconds for one run; every agent's run_timeout is shorter
READ_TIMEOUT = 60
MESSAGES = 2000  # transcript messages to read: all of a run's


def approval_request(request: Dict[str, Any]) -> Tuple[Optional[str], Dict[str, Any]]:
    """(tool, arguments) of an approval request, as the worker sent them beside the question (its
    metadata); (None, {}) for another question. The question's text may quote device output."""
    shown = (request.get("metadata") or {}).get("approval")
    if not isinstance(shown, dict) or not shown.get("tool"):
        return None, {}
    arguments = shown.get("arguments")
    return str(shown["tool"]), arguments if isinstance(arguments, dict) else {}


class Runner:
    """Runs jobs on a started lab, through its NorFab client."""

    def __init__(self, client: Any, lab: LabSettings, model: str) -> None:
        self.client = client
        self.lab = lab
        self.model = model

    def call(self, worker: str, task: str, **kwargs: Any) -> Any:
        reply = self.client.run_job("hermes", task, kwargs=kwargs, workers=[worker], timeout=READ_TIMEOUT)
        answer = (reply or {}).get(worker) or {}
        if answer.get("failed") or answer.get("result") is None:
            raise RuntimeError(f"hermes {task} on {worker} failed: {answer.get('errors') or 'no answer'}")
        return answer["result"]

    def reset(self) -> None:
        """Put the lab's story back to its start (the lab's ``reset`` job)."""
        if not self.lab.reset:
            return
        job = dict(self.lab.reset)
        reply = self.client.run_job(
            job.pop("service"), job.pop("task"), kwargs=job.pop("kwargs", {}), timeout=READ_TIMEOUT, **job
        )
        if not reply or any(result.get("failed") for result in reply.values()):
            raise RuntimeError(f"the lab's reset job failed: {reply}")

    def run(self, job: Job, repeat: int) -> RunData:
        data = RunData(job=job.id, repeat=repeat, model=self.model, agent=job.agent, worker=job.worker)
        self.reset()
        started = time.time()
        future = self.client.submit_job(
            "hermes",
            "invoke",
            kwargs={"agent": job.agent, "instructions": job.request, "interactive": True},
            workers=[job.worker],
            timeout=JOB_TIMEOUT,
        )
        if future is None:
            data.error = f"the broker did not accept the invoke for {job.agent} on {job.worker}"
            return data
        for event in future.events(timeout=JOB_TIMEOUT):
            request = (event.get("extras") or {}).get("input_request")
            if event.get("event_type") == "input_request" and request:
                data.approvals.append(self.answer(job, future, request))
        reply = (future.result(timeout=READ_TIMEOUT) or {}).get(job.worker) or {}
        data.seconds = time.time() - started
        result = reply.get("result")
        if reply.get("failed") or not isinstance(result, dict):
            data.error = f"invoke failed: {reply.get('errors') or reply.get('status') or 'no answer'}"
            return data
        data.response, data.stop_reason = result.get("response") or "", result.get("stop_reason") or ""
        data.run_id, data.session_id = result.get("run_id"), result.get("session_id")
        data.usage = {
            k: int((result.get("usage") or {}).get(k) or 0) for k in ("api_calls", "input_tokens", "output_tokens")
        }
        self.collect(data, job.agent, job.worker, result, via=None)
        return data

    def answer(self, job: Job, future: Any, request: Dict[str, Any]) -> Dict[str, Any]:
        """The operator's answer: yes only for calls the job's operator approves."""
        tool, arguments = approval_request(request)
        approved = bool(tool) and any(rule.matches(tool, arguments) for rule in job.operator.approve)
        future.send_response(input_id=request["id"], value=approved, worker=job.worker)
        return {"tool": tool, "arguments": arguments, "approved": approved, "question": request.get("question", "")}

    def collect(self, data: RunData, agent: str, worker: str, result: Dict[str, Any], via: Optional[str]) -> None:
        """The run's tool results and calls (with their arguments), then each delegated run's."""
        session = self.call(worker, "get_session", agent=agent, session_id=result["session_id"], limit=MESSAGES)
        arguments: Dict[str, Dict[str, Any]] = {}
        for message in session["messages"]:
            for call in message.get("tool_calls") or []:
                parsed = _json(call.get("arguments"))
                arguments.setdefault(arguments_digest(parsed), parsed)
            if message.get("role") == "tool":
                data.results.append(
                    ToolResult(
                        tool=message.get("tool_name") or "", content=message.get("content") or "", agent=agent, via=via
                    )
                )
        calls: List[Dict[str, Any]] = result.get("tool_calls") or []
        for call in calls:
            data.tool_calls.append(
                {**call, "agent": agent, "arguments": arguments.get(call.get("arguments_digest"), {})}
            )
        for call in calls:
            child = call.get("delegated") or {}
            if child.get("session_id") and child.get("run_id"):
                state = self.call(child["worker"], "get_run", agent=child["agent"], run_id=child["run_id"])
                finished = state.get("result") or {}
                for key in data.usage:
                    data.usage[key] += int((finished.get("usage") or {}).get(key) or 0)
                self.collect(
                    data, child["agent"], child["worker"], {**finished, "session_id": child["session_id"]}, call["tool"]
                )


def _json(text: Any) -> Dict[str, Any]:
    try:
        value = json.loads(text) if isinstance(text, str) else text
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def evaluate(
    runner: Runner,
    jobs: List[Job],
    repeats: int,
    folder: Path,
    model: Optional[ScriptedModel] = None,
    playbooks: Optional[Path] = None,
    prices: Optional[Prices] = None,
    say: Callable[[str], None] = print,
) -> List[RunScore]:
    """Every job that can run, ``repeats`` times, scored and written to ``folder``.

    With the scripted ``model``, each job runs on its playbook
    (``playbooks/<job id>.yaml``); a job without one fails its runs.
    """
    scores: List[RunScore] = []
    for job in jobs:
        if job.needs:
            say(f"{job.id}: not run, needs {job.needs}")
            continue
        for repeat in range(1, repeats + 1):
            data = RunData(job=job.id, repeat=repeat, model=runner.model, agent=job.agent, worker=job.worker)
            playbook = Path(playbooks or ".") / f"{job.id}.yaml"
            if model is not None and not playbook.is_file():
                data.error = f"no scripted playbook {playbook}"
            else:
                if model is not None:
                    model.scenario = Scenario.from_file(str(playbook))
                try:
                    data = runner.run(job, repeat)
                except Exception as error:  # one broken run must not lose the others' results
                    data.error = f"the run could not be made or read back: {error!r}"
            result = score(job, data, prices)
            write_run(folder, job, data, result)
            scores.append(result)
            outcome = "passed" if result.passed else "FAILED: " + "; ".join(result.reasons)
            say(
                f"{job.id} #{repeat}: {outcome} ({result.verdict}, {result.fabricated} fabricated, {result.seconds:.1f}s)"
            )
    return scores
