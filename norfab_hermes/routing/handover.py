"""
A shift handover across every hermes worker the client reaches: each
selected worker's ``handover`` task gives its sessions and scheduled
findings since a time, and the designated agent is asked to write the
briefing from all of it (affected services, evidence, actions taken with
who approved them, status, next checks, each with the session, run and job
references to continue from). Client side: no worker module, no Hermes.
"""

from typing import Any, Dict, List, Optional

from ..models import HandoverBriefing, HandoverMaterial
from .router import Reply, Router, RoutingError, Selector, invoke_job_timeout

DEFAULT_REQUEST = "Hand over the unresolved network issues to the next shift."
BRIEF = (
    "Write the handover briefing for the next shift from the material above. For each open issue give the "
    "affected services, the evidence, the actions taken with who approved them, its status and the next checks, "
    "each with the session, run and job references the next shift continues from. Check what is still open "
    "with your tools where you can, and quote what they return."
)
GATHER_TIMEOUT = 60


def _session(s: Any) -> List[str]:
    lines = [f"### Session {s.session_id} of agent {s.agent} on {s.worker} (last active {s.last_active})"]
    lines.append(f"Request: {s.request}")
    if s.answer:
        lines.append(f"Last answer: {s.answer}")
    if s.runs:
        lines.append(f"Runs: {', '.join(s.runs)}")
    if s.jobs:
        lines.append(f"NorFab jobs: {', '.join(s.jobs)}")
    if s.devices:
        lines.append(f"Devices: {', '.join(s.devices)}")
    for action in s.actions:
        lines.append(
            f"Action: {action.tool} on {action.device or 'its target'} approved by {action.approved_by} "
            f"(run {action.run_id}, job {action.job_uuid})"
        )
    return lines


def _finding(f: Any) -> List[str]:
    lines = [
        f"### Schedule {f.name} ({f.schedule_id}) of agent {f.agent} on {f.worker}: {f.status} at {f.started}",
        f"Run {f.run_id}, session {f.session_id}" + (f", NorFab jobs: {', '.join(f.jobs)}" if f.jobs else ""),
    ]
    lines += [f"Criterion {'met' if c.met else 'NOT met'}: {c.criterion} ({c.detail})" for c in f.criteria]
    lines.append(f"Finding: {f.finding}")
    return lines


def instructions(material: List[HandoverMaterial], since: str, request: str, case_id: Optional[str] = None) -> str:
    """What the writer is asked: the material of every worker, the brief, and the request on the last line."""
    lines = [f"# Handover material{f' of case {case_id}' if case_id else ''} since {since}", ""]
    for worker in material:
        lines += [f"## Worker {worker.worker}", ""]
        for session in worker.sessions:
            lines += _session(session) + [""]
        for finding in worker.findings:
            lines += _finding(finding) + [""]
        if not (worker.sessions or worker.findings):
            lines += ["Nothing since then.", ""]
    lines += _unanswered_runs(material)
    return "\n".join(lines + [BRIEF, request])


def _unanswered_runs(material: List[HandoverMaterial]) -> List[str]:
    """Runs the shared record holds of workers that gave no material (down, or not asked), each once."""
    answered = {m.worker for m in material}
    runs = {r.run_id: r for m in material for r in m.record_runs if r.worker not in answered}
    if not runs:
        return []
    lines = ["## Runs of workers that did not answer, from the fleet's shared record", ""]
    for r in sorted(runs.values(), key=lambda r: r.started, reverse=True):
        session = f", session {r.session_id}" if r.session_id else ""
        lines.append(
            f"- Run {r.run_id} of agent {r.agent} on {r.worker} ({r.ending}, started {r.started}{session}): "
            f'asked "{r.request}"; answered "{r.answer}"'
        )
    return lines + [""]


def handover(
    router: Router,
    writer: str,
    agents: Optional[List[str]] = None,
    since: Optional[str] = None,
    workers: Selector = None,
    request: Optional[str] = None,
    limit: int = 20,
    response_schema: Optional[Dict[str, Any]] = None,
    timeout: Optional[float] = None,
    case_id: Optional[str] = None,
) -> Reply:
    """
    Gather the handover material from every selected worker and have ``writer`` write the briefing;
    with ``case_id``, of that case only, and the writer's run belongs to the case.

    Returns a NorFab-Result-like dict: ``result`` is a ``HandoverBriefing``;
    ``failed`` and ``errors`` are the writer's run's.

    Raises:
        RoutingError: no alive worker, an unknown writer, or no worker gave its material.
    """
    asked = router.select(workers)
    target = router.resolve(writer, workers)
    kwargs: Dict[str, Any] = {"agents": agents, "since": since, "limit": limit, "case_id": case_id}
    replies = router.call("handover", asked, {k: v for k, v in kwargs.items() if v is not None}, GATHER_TIMEOUT)
    material, unreachable = [], []
    for worker in asked:
        res = replies.get(worker)
        if not res or res.get("failed") or not res.get("result"):
            unreachable.append(f"{worker}: {'; '.join((res or {}).get('errors') or ['no answer'])}")
        else:
            material.append(HandoverMaterial.model_validate(res["result"]))
    if not material:
        raise RoutingError(f"no hermes worker gave its handover material: {'; '.join(unreachable)}")
    start = min(m.since for m in material)
    run_kwargs: Dict[str, Any] = {"instructions": instructions(material, start, request or DEFAULT_REQUEST, case_id)}
    if case_id:
        run_kwargs["case_id"] = case_id
    if timeout:
        run_kwargs["timeout"] = timeout
    if response_schema:
        run_kwargs["response_schema"] = response_schema
    res = router.one("invoke", target, run_kwargs, timeout=invoke_job_timeout(timeout))
    briefing = HandoverBriefing(
        writer=f"{target.agent}@{target.worker}",
        since=start,
        material=material,
        unreachable=unreachable,
        briefing=res.get("result") if not res.get("failed") else None,
    )
    return {"failed": bool(res.get("failed")), "errors": res.get("errors") or [], "result": briefing.model_dump()}
