"""
An incident note from one session, in Markdown: the request, each answer
of the agent with every line it quoted linked to the artifact that holds
it and that artifact's digest, and the evidence table. Quoted lines are the
lines of fenced code blocks, as agents are told to quote device output; a
quoted line no artifact of the session holds is marked as such, never
linked. Links point at ``artifacts/<id>.txt`` beside the note (the shell
writes them there). Pure functions.
"""

import re
from typing import Dict, List, Tuple

from ...models import ArtifactSummary, SessionDetails
from .capture import quoted

FENCE = re.compile(r"^\s*(```|~~~)")
ANSWER_FORMAT = "[Answer format:"  # the line a structured run puts in front of its request


def link(artifact: ArtifactSummary) -> str:
    where = " ".join(x for x in (artifact.device, artifact.command) if x) or artifact.task
    return f"[{artifact.artifact_id}]({path(artifact)}) {where}, sha256 `{artifact.sha256}`"


def path(artifact: ArtifactSummary) -> str:
    return f"artifacts/{artifact.artifact_id}.txt"


def _answer(text: str, by_id: Dict[str, ArtifactSummary], texts: Dict[str, str]) -> Tuple[List[str], int, int]:
    """The answer with each fenced block turned into linked quotes; (lines, quotes, linked)."""
    out, inside, quotes, linked = [], False, 0, 0
    for line in text.splitlines():
        if FENCE.match(line):
            inside = not inside
            continue
        if not inside:
            out.append(line)
            continue
        if not line.strip():
            continue
        quotes += 1
        found = quoted(line, texts)
        if found:
            linked += 1
            out.append(f"> `{line.strip()}`  \n> from {link(by_id[found])}")
        else:
            out.append(f"> `{line.strip()}`  \n> **not found in the evidence of this session**")
        out.append("")
    return out, quotes, linked


def incident_note(
    session: SessionDetails, artifacts: List[ArtifactSummary], texts: Dict[str, str]
) -> Tuple[str, int, int]:
    """The note's Markdown, the number of quoted lines and how many of them are linked to an artifact."""
    by_id = {a.artifact_id: a for a in artifacts}
    kept = {a.artifact_id: texts[a.artifact_id] for a in artifacts if a.artifact_id in texts}
    requests = [m for m in session.messages if m.role == "user" and m.content]
    answers = [m for m in session.messages if m.role == "assistant" and m.content and not m.tool_calls]
    runs = sorted({a.run_id for a in artifacts})
    title = session.title or ((requests[0].content or "").splitlines()[-1][:80] if requests else session.session_id)
    lines = [
        f"# Incident note: {title}",
        "",
        f"- Agent: `{session.agent}` on worker `{session.worker}`",
        f"- Session: `{session.session_id}` (started {session.started}, last active {session.last_active})",
        f"- Runs with evidence: {', '.join(f'`{r}`' for r in runs) or 'none'}",
        f"- Artifacts: {len(artifacts)}; digests are sha256 of the kept text",
        "",
    ]
    quotes = linked = 0
    for index, message in enumerate(answers, 1):
        asked = [m for m in requests if (m.timestamp or "") <= (message.timestamp or "")]
        if asked:
            request = "\n".join(x for x in (asked[-1].content or "").splitlines() if not x.startswith(ANSWER_FORMAT))
            lines += [f"## Request {index}", "", *[f"> {x}" for x in request.splitlines()], ""]
        body, q, n = _answer(message.content or "", by_id, kept)
        quotes, linked = quotes + q, linked + n
        lines += [f"## Answer {index} ({message.timestamp})", "", *body, ""]
    lines += [
        "## Evidence",
        "",
        "| artifact | tool | device | command | job | collected | sha256 |",
        "|---|---|---|---|---|---|---|",
    ]
    for a in artifacts:
        lines.append(
            f"| [{a.artifact_id}]({path(a)}) | {a.tool} | {a.device or ''} | {a.command or ''} | "
            f"{a.job_uuid or ''} | {a.collected_at} | `{a.sha256}` |"
        )
    lines += ["", f"{linked} of {quotes} quoted line(s) linked to an artifact."]
    return "\n".join(lines) + "\n", quotes, linked
