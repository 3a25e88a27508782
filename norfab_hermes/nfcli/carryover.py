"""
Work that carries over, from the ``nf#`` shell: an agent's memory and
skills (``hermes memory AGENT (clear ...)``), a run's evidence (``hermes
evidence AGENT RUN (ARTIFACT)``), an incident note (``hermes report AGENT
SESSION (output FOLDER)``) and a shift handover across every hermes worker
(``hermes handover WRITER (only ...) (since ...) (output FILE)``).
"""

from pathlib import Path
from typing import Any, Dict, List, Literal, Optional

from pydantic import Field
from rich.console import Group, RenderableType
from rich.text import Text

from ..models import EvidenceResultData, HandoverBriefing, MemoryResultData, ReportResultData
from ..routing import Router
from ..routing.handover import handover as gather_and_write
from .common import WorkersOption, as_str, guarded, hint, misparsed, router
from .live import error_text, markdown
from .picle_compat import Maybe
from .tables import WRAP, short_time, table
from .views import failed

USAGE = """  hermes memory AGENT (clear memory|user|skills (entry "TEXT")) (workers WORKER)
  hermes evidence AGENT RUN_ID (ARTIFACT_ID) (workers WORKER)
  hermes report AGENT SESSION (output FOLDER) (workers WORKER)
  hermes handover WRITER (only "AGENT,AGENT") (since 12h) (case-id CASE) (output FILE) (workers SELECTOR)
    memory clear forgets one entry (a unique part of it, or a skill name) or, without entry, all of them;
    report writes FOLDER/incident-SESSION.md and the artifacts its quotes link to under FOLDER/artifacts/;
    handover gathers every selected worker's sessions and scheduled findings since then (default 12h);
    with case-id, the sessions of that case's runs since its first run."""

EVIDENCE_COLUMNS = ["artifact", "tool", "device", "command", "job", "collected", "chars", "sha256"]


def usage(problem: str) -> Text:
    return error_text([problem, "usage:", USAGE])


class HermesMemoryCommand(WorkersOption):
    clear: Optional[Literal["memory", "user", "skills"]] = Field(
        None, description="Forget the agent's memory notes, what it knows of the operator, or its skills"
    )
    # plain str: PICLE leaves the text alone
    entry: Maybe[str] = Field(None, description="With clear: a unique part of the one entry to forget, or a skill name")

    @staticmethod
    def run(
        agent: str, clear: Optional[str] = None, entry: Any = None, workers: Optional[str] = None, **kwargs: Any
    ) -> RenderableType:
        if refused := misparsed(kwargs):
            return refused
        if entry is not None and clear is None:
            return usage('entry goes with clear: hermes memory AGENT clear memory entry "TEXT"')
        text = " ".join(map(str, entry)) if isinstance(entry, list) else as_str(entry)
        return guarded(lambda: memory(router(), str(agent), clear, text, as_str(workers)))


def command(verb: str, args: List[str], kwargs: Dict[str, Any], workers: Optional[str]) -> RenderableType:
    """``hermes evidence|report|handover ...``: ``args`` are the verb's values, ``kwargs`` the shell's options."""
    output = as_str(kwargs.get("output"))
    if verb == "evidence":
        return guarded(lambda: evidence(router(), args, workers))
    if verb == "report":
        return guarded(lambda: report(router(), args, output, workers))
    agents, since, case_id = as_str(kwargs.get("only")), as_str(kwargs.get("since")), as_str(kwargs.get("case_id"))
    return guarded(lambda: handover(router(), args, agents, since, output, workers, case_id))


def memory(
    routes: Router, agent: str, clear: Optional[str], entry: Optional[str], workers: Optional[str]
) -> RenderableType:
    target = routes.resolve(agent, workers)
    kwargs = {"action": "clear", "target": clear, "entry": entry} if clear else {"action": "list"}
    res = routes.one("memory", target, {k: v for k, v in kwargs.items() if v})
    if problem := failed(res):
        return problem
    data = MemoryResultData.model_validate(res["result"])
    switches = f"memory {'on' if data.memory_on else 'off'}, skills {'on' if data.skills_on else 'off'}"
    parts: List[RenderableType] = [Text(f"agent '{data.agent}' on worker '{data.worker}' ({switches}): {data.message}")]
    rows = [["memory", e] for e in data.memory] + [["user", e] for e in data.user]
    rows += [["skill", f"{s.name}: {s.description}"] for s in data.skills]
    if rows:
        parts.append(table("what the agent remembers", ["kind", "entry"], rows, text={"entry": WRAP}))
        parts.append(hint(f'forget one: hermes memory {data.agent} clear memory entry "TEXT" workers {data.worker}'))
    return Group(*parts)


def evidence(routes: Router, args: List[str], workers: Optional[str]) -> RenderableType:
    """``hermes evidence AGENT RUN_ID (ARTIFACT_ID)``."""
    if len(args) not in (2, 3):
        return usage("evidence takes the agent and the run id, and optionally one artifact id")
    target = routes.resolve(args[0], workers)
    kwargs = {"run_id": args[1]} if len(args) == 2 else {"artifact_id": args[2]}
    res = routes.one("evidence", target, kwargs)
    if problem := failed(res):
        return problem
    data = EvidenceResultData.model_validate(res["result"])
    if data.artifact is not None:
        a = data.artifact
        head = f"artifact {a.artifact_id}: {a.tool} {a.device or ''} {a.command or a.task}, job {a.job_uuid}, sha256 {a.sha256}"
        return Group(Text(head), Text(a.text))
    rows = [
        [a.artifact_id, a.tool, a.device, a.command, a.job_uuid, short_time(a.collected_at), a.chars, a.sha256[:16]]
        for a in data.artifacts
    ]
    title = f"evidence of run {args[1]} of agent '{target.agent}' on worker '{target.worker}'"
    parts: List[RenderableType] = [
        table(title, EVIDENCE_COLUMNS, rows, drop=["collected", "chars", "job", "sha256"], text={"command": WRAP})
    ]
    if data.artifacts:
        parts.append(
            hint(f"read one whole: hermes evidence {target.agent} {args[1]} ARTIFACT_ID workers {target.worker}")
        )
    return Group(*parts)


def report(routes: Router, args: List[str], output: Optional[str], workers: Optional[str]) -> RenderableType:
    """``hermes report AGENT SESSION (output FOLDER)``."""
    if len(args) != 2:
        return usage("report takes the agent and the session id")
    target = routes.resolve(args[0], workers, args[1])
    res = routes.one("report", target, {"session_id": args[1]})
    if problem := failed(res):
        return problem
    data = ReportResultData.model_validate(res["result"])
    summary = Text(f"{data.linked} of {data.quotes} quoted line(s) linked to an artifact and its digest")
    if not output:
        return Group(markdown(data.markdown), summary)
    name = f"incident-{data.session_id}.md"
    if Path(name).name != name:  # a worker's reply never names a path on the operator's disk
        return error_text([f"session id '{data.session_id}' is not a file name: the note was not written"])
    folder = Path(output).expanduser()
    (folder / "artifacts").mkdir(parents=True, exist_ok=True)
    note = folder / name
    note.write_text(data.markdown, encoding="utf-8")
    for artifact in data.artifacts:
        whole = routes.one("evidence", target, {"artifact_id": artifact.artifact_id})
        if not whole.get("failed"):
            text = whole["result"]["artifact"]["text"]
            (folder / "artifacts" / f"{artifact.artifact_id}.txt").write_text(text, encoding="utf-8")
    return Group(Text(f"incident note written to {note} with {len(data.artifacts)} artifact(s)"), summary)


def handover(
    routes: Router,
    args: List[str],
    agents: Optional[str],
    since: Optional[str],
    output: Optional[str],
    workers: Optional[str],
    case_id: Optional[str] = None,
) -> RenderableType:
    """``hermes handover WRITER (only "AGENT,AGENT") (since 12h) (case-id CASE) (output FILE)``."""
    if len(args) != 1:
        return usage("handover takes the agent that writes the briefing")
    names = [a.strip() for a in agents.split(",") if a.strip()] if agents else None
    res = gather_and_write(routes, args[0], names, since, workers, case_id=case_id)
    data = HandoverBriefing.model_validate(res["result"])
    counts = ", ".join(f"{m.worker}: {len(m.sessions)} session(s), {len(m.findings)} finding(s)" for m in data.material)
    case = f" of case {case_id}" if case_id else ""
    parts: List[RenderableType] = [
        Text(f"handover{case} since {short_time(data.since)} written by {data.writer} ({counts})")
    ]
    parts += [Text(f"not gathered: {u}", style="yellow") for u in data.unreachable]
    if res.get("failed") or not data.briefing:
        return Group(*parts, error_text(res.get("errors") or ["the writer did not answer"]))
    briefing = str(data.briefing.get("response") or "")
    if output:
        Path(output).expanduser().write_text(briefing + "\n", encoding="utf-8")
        parts.append(Text(f"briefing written to {output}"))
    else:
        parts.append(markdown(briefing))
    writer, worker = data.writer.split("@")
    parts.append(hint(f"its session: hermes session {writer} {data.briefing.get('session_id')} workers {worker}"))
    return Group(*parts)
