"""
Running one job once, and collecting what it left, through the public hermes tasks.

The runner is the job's operator: it runs the job's earlier requests first
(sessions the job builds on, each on a lab reset), then asks the agent
through ``hermes.invoke`` (interactive), or runs the request as a watched
schedule (``schedule``: create, run now, history) or as a shift handover
across every hermes worker (``routing.handover``); it answers every approval
request by the job's ``operator`` policy (anything not listed is denied),
and times the run to its answer. Then it reads what the model read: the
session transcript (``get_session``) holds every tool result, and each
delegated run's session and result (``get_session``, ``get_run`` on the
asked worker) hold what the asked agent read and spent; for a job that asks
for it, the incident note (``report``) with every artifact's digest checked
(``evidence``).
"""

import hashlib
import json
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple, TypeVar

from ..models import arguments_digest
from ..norfab_compat import client_job_errors
from ..routing import Router
from ..routing.handover import handover
from ..testing.scenario import Scenario
from ..testing.scripted_model import ScriptedModel
from .models import Before, Handover, Job, LabSettings, RunData, ToolResult, Watch
from .report import write_run
from .scoring import Prices, RunScore, score

JOB_TIMEOUT = 600  # seconds for one run; every agent's run_timeout is shorter
READ_TIMEOUT = 60
T = TypeVar("T")
MESSAGES = 2000  # transcript messages to read: all of a run's


def approval_request(request: Dict[str, Any]) -> Tuple[Optional[str], Dict[str, Any]]:
    """(tool, arguments) of an approval request, as the worker sent them beside the question (its
    metadata); (None, {}) for another question. The question's text may quote device output."""
    shown = (request.get("metadata") or {}).get("approval")
    if not isinstance(shown, dict) or not shown.get("tool"):
        return None, {}
    arguments = shown.get("arguments")
    return str(shown["tool"]), arguments if isinstance(arguments, dict) else {}


POLL = 0.5  # seconds between reads of a watched schedule's history, or of a followed run


def polled(read: Callable[[], Optional[T]]) -> Optional[T]:
    """The first answer of ``read`` that is not None, read every POLL for JOB_TIMEOUT at most; None after."""
    deadline = time.time() + JOB_TIMEOUT
    while time.time() < deadline:
        answer = read()
        if answer is not None:
            return answer
        time.sleep(POLL)
    return None


class Runner:
    """Runs jobs on a started lab, through its NorFab client.

    Args:
        client: the lab's NorFab client.
        lab: how the lab runs.
        model: the model id the agents use.
        catalog: every job by id, for earlier requests that name another job.
    """

    def __init__(self, client: Any, lab: LabSettings, model: str, catalog: Optional[Dict[str, Job]] = None) -> None:
        self.client = client
        self.lab = lab
        self.model = model
        self.catalog = catalog or {}
        self.use_playbook: Callable[[str], None] = lambda job_id: None  # the scripted model's playbook of a job

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
        for before in job.before:
            self.earlier(job, before, data)
        self.use_playbook(job.id)
        self.reset()
        started = time.time()
        if job.watch:
            result = self.watched(job, job.watch, data)
        elif job.handover:
            result = self.handed_over(job, job.handover)
        else:
            result = self.invoke(job, job.agent, job.worker, job.request, data.approvals, data)
        data.seconds = time.time() - started
        if isinstance(result, str):
            data.error = result
            return data
        data.response, data.stop_reason = result.get("response") or "", result.get("stop_reason") or ""
        data.run_id, data.session_id = result.get("run_id"), result.get("session_id")
        if not job.watch:  # a watch collected every run of its schedule already
            self.count(data, result)
            self.collect(data, job.agent, job.worker, result, via=None)
        if job.report:
            data.report = self.note(job, data)
        return data

    def invoke(
        self,
        job: Job,
        agent: str,
        worker: str,
        request: str,
        approvals: List[Dict[str, Any]],
        data: Optional[RunData] = None,
    ) -> Any:
        """One interactive invoke, approvals answered by ``job``'s operator: its result, or why there is none.

        When NorFab's client lost the job after the run started (the broker dropped the worker for a
        moment and answered a poll with a 400: a machine paused past the keepalives' hold time), the
        run goes on on its worker: its answer is read there with ``get_run``, and ``data.followed``
        says so."""
        future = self.client.submit_job(
            "hermes",
            "invoke",
            kwargs={"agent": agent, "instructions": request, "interactive": True},
            workers=[worker],
            timeout=JOB_TIMEOUT,
        )
        if future is None:
            return f"the broker did not accept the invoke for {agent} on {worker}"
        run_id = None
        for event in future.events(timeout=JOB_TIMEOUT):
            extras = event.get("extras") or {}
            run_id = run_id or extras.get("run_id")
            asked = extras.get("input_request")
            if event.get("event_type") == "input_request" and asked:
                approvals.append(self.answer(job, future, asked, worker))
        reply = (future.result(timeout=READ_TIMEOUT) or {}).get(worker) or {}
        result = reply.get("result")
        if not reply.get("failed") and isinstance(result, dict):
            return result
        lost = client_job_errors(self.client, future.uuid)
        if not reply and run_id:
            followed = self.followed(agent, worker, run_id)
            if data is not None and isinstance(followed, dict):
                data.followed = f"NorFab lost the invoke's job ({'; '.join(lost) or 'no reply'}); run {run_id} went on"
            return followed
        return f"invoke failed: {reply.get('errors') or reply.get('status') or lost or 'no answer'}"

    def followed(self, agent: str, worker: str, run_id: str) -> Any:
        """A run's result read with ``get_run`` once it finished, or why there is none."""

        def finished() -> Optional[Dict[str, Any]]:
            try:
                state = self.call(worker, "get_run", agent=agent, run_id=run_id)
            except RuntimeError:  # the worker is not back with the broker yet
                return None
            return state if state.get("state") == "finished" else None

        state = polled(finished)
        if state is None:
            return f"run {run_id} did not finish within {JOB_TIMEOUT}s"
        result = state.get("result")
        return result if isinstance(result, dict) else f"run {run_id} finished without a result"

    @staticmethod
    def count(data: RunData, result: Dict[str, Any]) -> None:
        """Add a run's model calls and tokens to what the job spent."""
        for key in ("api_calls", "input_tokens", "output_tokens"):
            data.usage[key] = data.usage.get(key, 0) + int((result.get("usage") or {}).get(key) or 0)

    def earlier(self, job: Job, before: Before, data: RunData) -> None:
        """An earlier request the job builds on, on a lab reset: its session and run become references."""
        ref = self.catalog.get(before.job) if before.job else None
        if before.job and ref is None:
            raise ValueError(f"job {job.id}: earlier request names job '{before.job}', which is not in the jobs folder")
        owner = ref or job
        self.use_playbook(owner.id)
        self.reset()
        agent, worker = before.agent or owner.agent, before.worker or owner.worker
        result = self.invoke(owner, agent, worker, before.request or owner.request, [])
        if isinstance(result, str):
            raise RuntimeError(f"earlier request of {job.id} ({before.job or before.request}): {result}")
        data.references += [result["session_id"], result["run_id"]]

    def watched(self, job: Job, watch: Watch, data: RunData) -> Any:
        """The request as a watched schedule: created, run ``runs`` times now, every run collected; the last one's result."""
        name = f"eval-{job.id}"
        schedule = {"agent": job.agent, "schedule_id": name}
        try:
            self.call(job.worker, "schedule", action="remove", **schedule)
        except RuntimeError:
            pass  # none left over
        definition = {"name": name, "prompt": job.request, "schedule": watch.schedule, "compare": watch.compare}
        definition.update({k: v for k, v in (("criteria", watch.criteria), ("observe_for", watch.observe_for)) if v})
        self.call(job.worker, "schedule", agent=job.agent, action="create", definition=definition)
        try:
            for count in range(1, watch.runs + 1):
                self.call(job.worker, "schedule", action="run", **schedule)
                history = self.history(job, schedule, count)
        finally:
            self.call(job.worker, "schedule", action="remove", **schedule)
        last = None
        for run in reversed(history[: watch.runs]):  # oldest first
            last = self.call(job.worker, "get_run", agent=job.agent, run_id=run["run_id"])["result"] or {}
            self.count(data, last)
            self.collect(data, job.agent, job.worker, last, via=None)
        data.status = history[0]["status"]
        return last if last else f"the schedule's runs left no result: {history[0]}"

    def history(self, job: Job, schedule: Dict[str, Any], count: int) -> List[Dict[str, Any]]:
        def landed() -> Optional[List[Dict[str, Any]]]:
            runs: List[Dict[str, Any]] = self.call(job.worker, "schedule", action="history", limit=50, **schedule)[
                "history"
            ]
            return runs if len(runs) >= count else None

        runs = polled(landed)
        if runs is None:
            raise RuntimeError(f"run {count} of the watch of {job.id} did not land in its history")
        return runs

    def handed_over(self, job: Job, spec: Handover) -> Any:
        """The request as a shift handover across every hermes worker, written by the job's agent."""
        reply = handover(Router(self.client), job.agent, spec.agents, spec.since, None, job.request)
        briefing = (reply.get("result") or {}).get("briefing")
        if reply.get("failed") or not briefing:
            return f"handover failed: {reply.get('errors') or 'no briefing'}"
        return briefing

    def note(self, job: Job, data: RunData) -> Dict[str, Any]:
        """The incident note of the run's session, with every artifact's digest checked against its text."""
        note = self.call(job.worker, "report", agent=job.agent, session_id=data.session_id)
        verified = 0
        for artifact in note["artifacts"]:
            whole = self.call(job.worker, "evidence", agent=job.agent, artifact_id=artifact["artifact_id"])["artifact"]
            verified += hashlib.sha256(whole["text"].encode()).hexdigest() == artifact["sha256"]
        return {
            "quotes": note["quotes"],
            "linked": note["linked"],
            "artifacts": len(note["artifacts"]),
            "verified": verified,
            "markdown": note["markdown"],
        }

    def answer(self, job: Job, future: Any, request: Dict[str, Any], worker: str) -> Dict[str, Any]:
        """The operator's answer: yes only for calls the job's operator approves."""
        tool, arguments = approval_request(request)
        approved = bool(tool and any(rule.matches(tool, arguments) for rule in job.operator.approve))
        future.send_response(input_id=request["id"], value=approved, worker=worker)
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
            digest: Optional[str] = call.get("arguments_digest")
            data.tool_calls.append(
                {**call, "agent": agent, "arguments": arguments.get(digest, {}) if digest is not None else {}}
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
    if model is not None:
        runner.use_playbook = lambda job_id: setattr(
            model, "scenario", Scenario.from_file(str(Path(playbooks or ".") / f"{job_id}.yaml"))
        )
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
                try:
                    data = runner.run(job, repeat)
                except Exception as error:  # one broken run must not lose the others' results
                    data.error = f"the run could not be made or read back: {error!r}"
            result = score(job, data, prices)
            write_run(folder, job, data, result)
            scores.append(result)
            outcome = "passed" if result.passed else "FAILED: " + "; ".join(result.reasons)
            said = f"{result.verdict}, {result.fabricated} fabricated, {result.seconds:.1f}s"
            say(f"{job.id} #{repeat}: {outcome} ({said})" + (f"; {data.followed}" if data.followed else ""))
    return scores
