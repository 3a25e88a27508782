"""
Scenario files for the scripted model.

A scenario lets the scripted model run a whole investigation: call tools,
read what they returned, and answer with findings quoted from the real tool
output. The file is YAML::

    rules:
      - match: "(?i)check interfaces on (?P<host>\\S+)"   # regex on the user message
        steps:
          - call: inspect_interfaces                     # one or more tool calls
            args: {FB: "{{ host }}"}
          - say: |                                       # final answer (Jinja2)
              Down on {{ host }}:
              {% for line in grep("inspect_interfaces", "line protocol is down") %}
              - {{ line }}
              {% endfor %}

Step ``n`` runs after ``n`` tool rounds of the current turn. A step is either
``call`` (with ``args``) / ``calls: [{call, args}, ...]`` or ``say``. Strings in
``args`` and ``say`` are Jinja2 templates that see the regex groups and:

- ``result(tool, n=-1)``: the text of ``tool``'s n-th result in this turn
  ("" if none);
- ``lines(text, regex)``: the lines of ``text`` that match ``regex``; JSON is
  walked, so device output inside NorFab result envelopes is searched line
  by line;
- ``grep(tool, regex)``: ``lines`` over every result of ``tool``;
- ``ok(tool, n=-1)`` / ``error(tool, n=-1)``: a NorFab tool result's ``ok``
  flag and ``error`` text;
- ``answer(tool, n=-1)``: what the agent asked through a delegate answered;
- ``called(tool)``: whether ``tool`` ran in this turn;
- ``search(text, regex)``: the first match of ``regex`` in ``text`` (its
  first group if it has one), "" if none; ``find(tool, regex)``: the same
  over every result of ``tool``.

A template that fails (e.g. no line matched where one was indexed) makes the
model answer with the error, so a broken scenario is visible, not silent.

Rules only offer tools the profile actually has: a rule whose next call names
a tool the request does not offer is skipped, so a scenario never lets a model
call what an agent was not granted.
"""

import json
import re
import warnings
from typing import Any, Dict, Iterator, List, Optional

import jinja2
import yaml

from ..safety.guards import strings_in

_ENV = jinja2.Environment(undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)


def _strings(value: Any) -> Iterator[str]:
    """Every string leaf of a JSON-like value, or the text itself.

    Text that starts with a JSON document followed by other text (Hermes
    sometimes appends notes to tool results) yields both parts.
    """
    if isinstance(value, str):
        try:
            decoded, end = json.JSONDecoder().raw_decode(value.lstrip())
        except ValueError:
            yield value
            return
        yield from [decoded] if isinstance(decoded, str) else _strings(decoded)
        rest = value.lstrip()[end:].strip()
        if rest:
            yield rest
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


class Scenario:
    def __init__(self, rules: List[dict]) -> None:
        if not isinstance(rules, list) or not rules:
            raise ValueError("scenario needs a non-empty 'rules' list")
        self.rules = []
        for index, rule in enumerate(rules):
            if "match" not in rule or not rule.get("steps"):
                raise ValueError(f"scenario rule {index} needs 'match' and 'steps'")
            self.rules.append({"match": re.compile(rule["match"], re.S), "steps": rule["steps"]})
        self._templates: Dict[str, jinja2.Template] = {}
        for _, text in strings_in([rule["steps"] for rule in rules]):
            try:
                self._template(text)
            except jinja2.TemplateError:
                pass  # reported by the step that uses it, as its reply

    def _template(self, source: str) -> jinja2.Template:
        """The compiled template; compiled once, while the scenario loads.

        Jinja decodes string literals with Python's unicode-escape, which warns
        about the regex escapes playbooks are full of (``'\\s+'``) and keeps them.
        """
        if source not in self._templates:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                self._templates[source] = _ENV.from_string(source)
        return self._templates[source]

    @classmethod
    def from_file(cls, path: str) -> "Scenario":
        return cls.from_files([path])

    @classmethod
    def from_files(cls, paths: List[str]) -> "Scenario":
        """One scenario of the rules of several files, in order."""
        rules: List[dict] = []
        for path in paths:
            with open(path, encoding="utf-8") as f:
                rules += (yaml.safe_load(f) or {}).get("rules") or []
        return cls(rules)

    def next_step(self, user_text: str, results: List[dict], tools: set) -> Optional[Dict[str, Any]]:
        """The reply for this point of the turn, or None when no rule applies."""
        rounds = len({r["round"] for r in results})
        for rule in self.rules:
            match = rule["match"].search(user_text)
            if not match or rounds >= len(rule["steps"]):
                continue
            context = self._context(match, results)
            step = rule["steps"][rounds]
            calls = [] if "say" in step else step.get("calls") or [{"call": step["call"], "args": step.get("args", {})}]
            if any(call["call"] not in tools for call in calls):
                continue
            try:
                if "say" in step:
                    return {"content": self._template(step["say"]).render(**context).strip()}
                return {
                    "tool_calls": [
                        {"name": call["call"], "arguments": json.dumps(self._render(call.get("args", {}), context))}
                        for call in calls
                    ]
                }
            except (jinja2.TemplateError, LookupError, ValueError, TypeError) as error:
                return {"content": f"scenario step {rounds} of rule '{rule['match'].pattern}' failed: {error!r}"}
        return None

    def _render(self, value: Any, context: dict) -> Any:
        if isinstance(value, str):
            return self._template(value).render(**context)
        if isinstance(value, dict):
            return {k: self._render(v, context) for k, v in value.items()}
        if isinstance(value, list):
            return [self._render(v, context) for v in value]
        return value

    @staticmethod
    def _context(match: re.Match, results: List[dict]) -> dict:
        def of(tool: str) -> List[str]:
            return [r["content"] for r in results if r["name"] == tool]

        def result(tool: str, n: int = -1) -> str:
            found = of(tool)
            return found[n] if -len(found) <= n < len(found) else ""

        def lines(text: str, pattern: str) -> List[str]:
            regex = re.compile(pattern)
            return [line.strip() for string in _strings(text) for line in string.splitlines() if regex.search(line)]

        def search(text: Any, pattern: str) -> str:
            regex = re.compile(pattern, re.M)
            for string in _strings(text):
                match = regex.search(string)
                if match:
                    return match.group(1 if regex.groups else 0)
            return ""

        def field(tool: str, n: int, name: str) -> Any:
            try:
                return json.loads(result(tool, n)).get(name)
            except (ValueError, AttributeError):
                return None

        return {
            **{k: v or "" for k, v in match.groupdict().items()},
            "result": result,
            "lines": lines,
            "grep": lambda tool, pattern: [line for text in of(tool) for line in lines(text, pattern)],
            "ok": lambda tool, n=-1: field(tool, n, "ok") is True,
            "error": lambda tool, n=-1: field(tool, n, "error") or "",
            "answer": lambda tool, n=-1: field(tool, n, "response") or "",
            "called": lambda tool: bool(of(tool)),
            "search": search,
            "find": lambda tool, pattern: next((found for text in of(tool) if (found := search(text, pattern))), ""),
        }
