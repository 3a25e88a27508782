"""
Quoted evidence: what an answer quotes, and where in the run it came from.

An answer quotes evidence as lines in fenced code blocks (the lab agents are
told to put nothing else there). A quote is *found* when, whitespace runs
aside, it is part of a line some tool of the same run returned; it is then
linked to that call's NorFab job UUID, and for device output to the device
and command. A quote no tool returned is *fabricated*. Pure functions.
"""

import json
import re
from typing import Any, Iterator, List, Optional, Tuple

from pydantic import BaseModel

from .models import Evidence, ToolResult

FENCE = re.compile(r"^\s*(```|~~~)")
PROMPT = re.compile(r"^\s*[\w.-]+[#>]\s*")  # a device prompt before a command: "dist1# "


class Source(BaseModel):
    """Lines one tool call returned, with where they came from."""

    tool: str
    job_uuid: Optional[str] = None
    device: Optional[str] = None
    command: Optional[str] = None
    via: Optional[str] = None
    lines: List[str] = []


class Quote(BaseModel):
    text: str
    found: bool = False
    tool: Optional[str] = None
    job_uuid: Optional[str] = None
    device: Optional[str] = None
    command: Optional[str] = None
    via: Optional[str] = None


def normal(text: str) -> str:
    return " ".join(text.split())


def quoted_lines(answer: str) -> List[str]:
    """The non-empty lines inside the answer's fenced code blocks."""
    quotes, inside = [], False
    for line in answer.splitlines():
        if FENCE.match(line):
            inside = not inside
        elif inside and line.strip():
            quotes.append(line.strip())
    return quotes


def _decode(text: str) -> Any:
    """The JSON document a tool result starts with (Hermes may append a note), or the text."""
    try:
        return json.JSONDecoder().raw_decode(text.lstrip())[0]
    except ValueError:
        return text


def _leaves(value: Any, path: Tuple[str, ...] = ()) -> Iterator[Tuple[Tuple[str, ...], str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(item, path + (str(key),))
    elif isinstance(value, list):
        for item in value:
            yield from _leaves(item, path)


def sources(result: ToolResult) -> List[Source]:
    """The lines of one tool result, split by device and command where the result says them.

    A NorFab tool result is ``{job_uuid, task, workers: {W: {result: ...}}}``;
    a nornir result is keyed by host, then command. A workflow tool's result
    holds its steps, each a NorFab task's result (``steps: {STEP: [{task,
    result}]}``), linked to the workflow's job. A delegate's result holds the
    asked agent's ``response``.
    """
    payload = _decode(result.content)
    if not isinstance(payload, dict):
        return [Source(tool=result.tool, via=result.via, lines=str(payload).splitlines())]
    uuid = payload.get("job_uuid")
    task = str(payload.get("task") or "")
    if task == "workflow.run":
        return [
            source
            for entries in (payload.get("steps") or {}).values()
            for entry in entries
            for source in _step_sources(result, uuid, entry)
        ]
    found: List[Source] = []
    for path, text in _leaves(payload):
        device = command = None
        if path[:1] == ("workers",) and len(path) >= 3 and path[2] == "result":
            if task.startswith("nornir.") and len(path) >= 5:
                device, command = path[3], path[4]
            else:
                command = task or None
        elif path[:1] != ("response",):
            continue  # the envelope's own fields (tool, task, errors) are not evidence
        found.append(
            Source(
                tool=result.tool, job_uuid=uuid, device=device, command=command, via=result.via, lines=text.splitlines()
            )
        )
    return found


def _step_sources(result: ToolResult, uuid: Any, step: Any) -> List[Source]:
    """The lines of one workflow step's result, by device and command for a nornir task."""
    task = str(step.get("task") or "") if isinstance(step, dict) else ""
    found = []
    for path, text in _leaves(step.get("result") if isinstance(step, dict) else None):
        device, command = (path[0], path[1]) if task.startswith("nornir.") and len(path) >= 2 else (None, task or None)
        found.append(
            Source(
                tool=result.tool, job_uuid=uuid, device=device, command=command, via=result.via, lines=text.splitlines()
            )
        )
    return found


def locate(quote: str, found: List[Source]) -> Quote:
    """The quote, linked to the first source that holds it; device output first."""
    wanted = normal(quote)
    holders = [s for s in found if wanted and any(wanted in normal(line) for line in s.lines)]
    if not holders:
        return Quote(text=quote)
    best = next((s for s in holders if s.device), holders[0])
    return Quote(text=quote, found=True, **best.model_dump(include={"tool", "job_uuid", "device", "command", "via"}))


def quotes(answer: str, results: List[ToolResult]) -> List[Quote]:
    """The answer's quotes, each located in the run's tool results.

    A quoted line that is only a command the run ran (``show logging``,
    ``dist1# show logging``) heads the output below it; it claims nothing.
    """
    found = [source for result in results for source in sources(result)]
    commands = {normal(s.command) for s in found if s.device and s.command}
    return [locate(line, found) for line in quoted_lines(answer) if normal(PROMPT.sub("", line)) not in commands]


def covers(item: Evidence, quote: Quote, results_sources: List[Source]) -> bool:
    """Whether a found quote proves a required evidence item: the text, from that device and command."""
    if not quote.found:
        return False
    text = normal(quote.text)
    if item.line and normal(item.line) not in text:
        return False
    if item.match and not re.search(item.match, text):
        return False
    wanted = normal(quote.text)
    return any(
        (item.device is None or source.device == item.device)
        and (item.command is None or normal(source.command or "") == normal(item.command))
        and any(wanted in normal(line) for line in source.lines)
        for source in results_sources
    )


def coverage(
    required: List[Evidence], found_quotes: List[Quote], results: List[ToolResult]
) -> List[Tuple[Evidence, Optional[Quote]]]:
    """Each required item with the quote that proves it (None: not quoted)."""
    all_sources = [source for result in results for source in sources(result)]
    return [(item, next((q for q in found_quotes if covers(item, q, all_sources)), None)) for item in required]
