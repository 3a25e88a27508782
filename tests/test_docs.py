"""
The docs stay true to the code. Fast, no NorFab, and the worker module is never imported (its @Task
methods would join NorFab's process-global task registry): the tasks' declarations are read from
the worker's source with ast.

- Every REST route and HTTP method the docs quote is how the task is published.
- The table of what REST and MCP clients get (rest-mcp.md) matches each task's declaration: REST,
  MCP and its annotations, NorFab's agent service; and it lists every task.
- Every task name the docs quote (task pages, ``hermes.X``, ``"hermes", "X"``, REST routes, MCP
  tool names, the shell's table) is a task, and every task has a page.
- Every error text quoted in a docs table of errors is produced by the code: this package's, or the
  pinned NorFab, PICLE, Hermes or pydantic that produce it.
- The module map lists every module, and the test inventory every test file.
"""

import ast
import re
from functools import lru_cache
from importlib.metadata import distribution
from pathlib import Path
from typing import Any, Dict, Iterator, List, Set, Tuple

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE, DOCS, TESTS = ROOT / "norfab_hermes", ROOT / "docs", ROOT / "tests"
TASKS = PACKAGE / "worker" / "tasks"  # the NorFab task mixins and HermesTask
PAGES = sorted(DOCS.rglob("*.md")) + [ROOT / "README.md"]
HTTP_METHOD = r"GET|POST|PUT|PATCH|DELETE"
HOLE, MORE = "\x00", "\x01"  # a placeholder: a value, and text left out ("...")
TOKEN = rf"[{HOLE}\x01]|\w+|[^\w\s]"
# keys of an agent's native `hermes:` configuration (hermes.model, ...), not tasks
HERMES_CONFIG_KEYS = {"model", "agent", "platforms", "plugins", "platform_toolsets", "gateway"}
# the packages whose messages the docs may quote besides this one's
UPSTREAM = ("norfab", "picle", "hermes-agent")


def text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def where(path: Path) -> str:
    return str(path.relative_to(ROOT))


# ------------------------------------------------------------------ the code


@lru_cache(maxsize=None)
def tasks() -> Dict[str, Dict[str, Any]]:
    """Every @HermesTask of the worker: its REST methods (None: not published), MCP, NorFab agent."""
    constants = {}
    for node in ast.parse(text(TASKS / "base.py")).body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            try:
                constants[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                pass

    def value(node: ast.AST) -> Any:
        return constants[node.id] if isinstance(node, ast.Name) else ast.literal_eval(node)

    found = {}
    for path in sorted(TASKS.glob("*.py")):
        for node in ast.walk(ast.parse(text(path))):
            if not isinstance(node, ast.FunctionDef):
                continue
            for decorator in node.decorator_list:
                if isinstance(decorator, ast.Call) and getattr(decorator.func, "id", None) == "HermesTask":
                    options = {
                        k.arg: value(k.value) for k in decorator.keywords if k.arg in ("fastapi", "mcp", "agent")
                    }
                    rest = options.get("fastapi", {})
                    found[node.name] = {
                        "methods": None if rest is False else set(rest.get("methods") or ["POST"]),
                        "mcp": options.get("mcp", {}),
                        "agent": options.get("agent", {}) is not False
                        and (options.get("agent") or {}).get("enabled", True),
                    }
    assert len(found) >= 18, found  # the parser still finds the tasks
    return found


def published() -> Set[str]:
    """Tasks a client may call (run_shell_cmd is every NorFab worker's, refused on hermes workers)."""
    return {name for name in tasks() if name != "run_shell_cmd"}


def renderings(node: ast.JoinedStr) -> List[str]:
    """An f-string's texts: each placeholder a HOLE, or a string it holds inline (``{x or 'none'}``)."""
    texts = [""]
    for part in node.values:
        if isinstance(part, ast.Constant):
            texts = [t + str(part.value) for t in texts]
            continue
        inline = [c.value for c in ast.walk(part.value) if isinstance(c, ast.Constant) and isinstance(c.value, str)]
        options = [HOLE, *inline] if len(texts) * (len(inline) + 1) <= 64 else [HOLE]
        texts = [t + o for t in texts for o in options]
    return texts


@lru_cache(maxsize=None)
def message_templates() -> Tuple[Tuple[Tuple[str, ...], frozenset], ...]:
    """Every string of this package as tokens, a placeholder as HOLE: what its messages are made of."""
    found: Set[Tuple[str, ...]] = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(text(path))):
            if isinstance(node, ast.JoinedStr):
                found.update(tokens(rendered) for rendered in renderings(node))
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                found.add(tokens(node.value))
    # messages, not docstrings: at least three words, at most a long line
    return tuple((t, frozenset(t)) for t in found if len(t) <= 80 and sum(token != HOLE for token in t) >= 3)


@lru_cache(maxsize=None)
def message_pieces() -> str:
    """The literal pieces of every string of this package, between its placeholders, one per line."""
    pieces: Set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(text(path))):
            if isinstance(node, ast.JoinedStr):
                for rendered in renderings(node):
                    pieces.update(rendered.split(HOLE))
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                pieces.add(node.value)
    return "\x02".join(pieces)


@lru_cache(maxsize=None)
def upstream_text() -> str:
    """The source of the pinned upstream packages, and pydantic-core's messages (compiled)."""
    parts = []
    for name in UPSTREAM:
        for file in distribution(name).files or []:
            if file.suffix == ".py":
                parts.append(Path(file.locate()).read_text(encoding="utf-8", errors="replace"))
    for file in distribution("pydantic-core").files or []:
        if file.suffix == ".so":
            parts.append(Path(file.locate()).read_bytes().decode("latin-1"))
    return "\n".join(parts)


# ------------------------------------------------------------------ the docs


def table_rows(page: str) -> Iterator[Tuple[List[str], List[str]]]:
    """(header, cells) of every row of every Markdown table."""
    header = None
    for line in page.splitlines():
        if not line.startswith("|"):
            header = None
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if header is None:
            header = cells
        elif not set(line.replace("|", "").strip()) <= set("-: "):
            yield header, cells


def error_texts() -> Iterator[Tuple[str, str]]:
    """(page, text) of every message quoted in the first column of a table of errors or warnings."""
    for path in PAGES:
        for header, cells in table_rows(text(path)):
            if header[0].lower().startswith(("error", "symptom", "warning")):
                for span in re.findall(r"`([^`]+)`", cells[0]):
                    if len(span.split()) >= 3 and not span.startswith("{{"):
                        yield where(path), span


def placeholders(message: str) -> str:
    """A quoted message with its placeholders marked: values ('x', <id>, N, numbers) as HOLE, an
    ellipsis (text left out) as MORE."""
    marked = re.sub(r"(?<![\w'])'[^']*?'(?![\w])", f"'{HOLE}'", message)
    marked = re.sub(r"\.\.\.|…", MORE, marked)
    return re.sub(r"<[^>]*>|\b[A-Z]\b|\d+(?:\.\d+)?", HOLE, marked)


def tokens(message: str) -> Tuple[str, ...]:
    return tuple(re.findall(TOKEN, message))


@lru_cache(maxsize=None)
def in_the_code(text: str) -> bool:
    """Each fixed part of ``text`` (split at placeholders, ': ' and '; ') is in this package's
    strings or in the pinned upstream code."""
    parts = [part.strip() for chunk in re.split(f"[{HOLE}{MORE}]", text) for part in re.split(r": |; ", chunk)]
    return all(len(part) < 4 or part in message_pieces() or part in upstream_text() for part in parts)


def is_value(text: str, depth: int) -> bool:
    """What a placeholder of the code may hold: a few words, a list of names, or code-made text."""
    words = re.findall(r"\w+", text)
    if len(words) <= 3 or re.fullmatch(r"[\w./@-]+(, [\w./@-]+)*", text):
        return True
    return in_the_code(text) or (depth < 2 and code_made(text, depth + 1))


def fits_template(marked: str, template: Tuple[str, ...], depth: int = 0) -> bool:
    """Whether one string of the code, its placeholders filled, reads as the quoted message: every
    fixed word of the template in order; a placeholder holds a value (:func:`is_value`); the
    message's MORE stands for any text, a value of the message for a placeholder of the code or a
    quoted word or two the code spells out."""
    spans = [(m.start(), m.end(), m.group()) for m in re.finditer(TOKEN, marked)]
    quoted = [token for _, _, token in spans]
    n, m = len(quoted), len(template)

    @lru_cache(maxsize=None)
    def match(i: int, j: int, spelled: int = 0) -> bool:
        if i == n or j == m:
            return all(token == MORE for token in quoted[i:]) and all(token == HOLE for token in template[j:])
        if template[j] == HOLE:
            return any(
                match(k, j + 1) and (k == i or is_value(marked[spans[i][0] : spans[k - 1][1]], depth))
                for k in range(i, n + 1)
            )
        if quoted[i] == MORE:
            return match(i + 1, j) or match(i, j + 1)
        if quoted[i] == HOLE:  # the code may spell the value out: a word or two, inside its quotes
            inside = template[j - 1] == "'" if spelled == 0 else True
            spell = spelled < 3 and inside and re.fullmatch(r"\w+", template[j]) is not None
            return match(i + 1, j) or (spell and match(i, j + 1, spelled + 1))
        return quoted[i] == template[j] and match(i + 1, j + 1)

    return match(0, 0)


@lru_cache(maxsize=None)
def code_made(marked: str, depth: int = 0) -> bool:
    """Text with its placeholders marked is the code's: each of its fixed parts is in the code
    (:func:`in_the_code`), or one string of this package reads as it (:func:`fits_template`)."""
    if in_the_code(marked):
        return True
    words = {token for token in tokens(marked) if len(token) >= 4}
    return any(words & shared and fits_template(marked, template, depth) for template, shared in message_templates())


def from_the_code(message: str) -> bool:
    return code_made(placeholders(message))


def page_tasks(path: Path) -> List[str]:
    match = re.search(r"^> task api names?: (.+)$", text(path), re.M)
    return re.findall(r"`(\w+)`", match.group(1)) if match else []


# ------------------------------------------------------------------ the checks


def test_rest_routes_and_methods_the_docs_quote_are_the_tasks():
    methods = set().union(*(t["methods"] for t in tasks().values() if t["methods"]))
    for path in PAGES:
        for method, name in re.findall(rf"\b({HTTP_METHOD})\s+/api/hermes/([\w<>]+)", text(path)):
            targets = published() if name == "<task>" else [name]
            for task in targets:
                assert task in tasks(), f"{where(path)}: {method} /api/hermes/{name}/: no task '{task}'"
                assert method in (tasks()[task]["methods"] or set()), f"{where(path)}: {task} is not {method} over REST"
        for method in re.findall(rf"`({HTTP_METHOD})`", text(path)):
            assert method in methods, f"{where(path)}: `{method}`: every hermes route is {sorted(methods)}"


def test_the_rest_and_mcp_table_matches_each_tasks_declaration():
    page = text(DOCS / "rest-mcp.md")
    section = page[page.index("## What clients get") :]
    section = section[: section.index("\n## ", 4)]
    listed = set()
    for header, cells in table_rows(section):
        assert header[:5] == ["hermes task", "REST route", "MCP tool", "MCP annotations", "NorFab agent service"], (
            header
        )
        names = re.findall(r"\[(\w+)\]", cells[0]) or [n.strip() for n in cells[0].split(",")]
        for name in names:
            assert name in tasks(), f"rest-mcp.md lists '{name}', which is no task"
            task, row = tasks()[name], f"rest-mcp.md, {name}"
            listed.add(name)
            assert (cells[1] == "not offered") == (task["methods"] is None), row
            if task["methods"]:
                assert re.fullmatch(rf"`POST /api/hermes/({name}|<task>)/`", cells[1]), row
                assert task["methods"] == {"POST"}, row
            assert (cells[2] == "not offered") == (task["mcp"] is False), f"{row}: MCP"
            if task["mcp"] is not False:
                assert re.fullmatch(rf"`service_hermes__task_({name}|<task>)`", cells[2]), row
                hints = task["mcp"].get("annotations", {})
                words = cells[3]
                for phrase, hint, expected in (
                    ("not read-only", "readOnlyHint", False),
                    ("read-only", "readOnlyHint", True),
                    ("not destructive", "destructiveHint", False),
                    ("destructive", "destructiveHint", True),
                    ("idempotent", "idempotentHint", True),
                    ("open world", "openWorldHint", True),
                ):
                    if phrase in words:
                        assert hints.get(hint) is expected, f"{row}: '{phrase}' but {hint}={hints.get(hint)}"
                        words = words.replace(phrase, "")
            assert (cells[4] == "offered") == bool(task["agent"]), f"{row}: NorFab agent service"
    assert listed == set(tasks()), f"rest-mcp.md leaves out {sorted(set(tasks()) - listed)}"


def test_task_names_the_docs_quote_are_tasks_and_every_task_has_a_page():
    quoted: List[Tuple[str, str]] = []
    for path in PAGES:
        page = text(path)
        quoted += [
            (where(path), n)
            for n in re.findall(r"(?<![\w./])hermes\.(\w+)\b(?![.(\w])", page)
            if n not in HERMES_CONFIG_KEYS
        ]
        quoted += [(where(path), n) for n in re.findall(r"\"hermes\",\s*\"(\w+)\"", page)]
        quoted += [(where(path), n) for n in re.findall(r"service_hermes__task_(\w+)", page)]
        quoted += [(where(path), n) for n in page_tasks(path)]
    for header, cells in table_rows(text(DOCS / "shell.md")):
        if len(header) > 1 and header[1] == "Worker task":
            quoted += [("docs/shell.md", n) for n in re.findall(r"`(\w+)`", cells[1])]
    assert len(quoted) > 40, quoted
    unknown = [f"{page}: {name}" for page, name in quoted if name not in tasks()]
    assert not unknown, f"not tasks: {unknown}"
    paged = {name for path in (DOCS / "tasks").glob("*.md") for name in page_tasks(path)}
    assert published() <= paged, f"tasks without a page: {sorted(published() - paged)}"


def test_what_task_pages_say_of_mcp_is_their_tasks_declaration():
    for path in sorted((DOCS / "tasks").glob("*.md")):
        for sentence in re.split(r"(?<=[.!?])\s", text(path)):
            hidden = re.search(r"hidden from MCP|not offered (?:to|over) MCP", sentence)
            offered = re.search(r"(?:published|offered) (?:on|over|to) MCP", sentence) and not hidden
            for name in page_tasks(path) if hidden or offered else []:
                assert (tasks()[name]["mcp"] is False) == bool(hidden), f"{where(path)}: {sentence.strip()!r}"


@pytest.mark.parametrize("page, message", sorted(set(error_texts())))
def test_error_texts_the_docs_quote_come_from_the_code(page, message):
    assert from_the_code(message), f"{page}: `{message}`: no string of the code reads like this"


def test_the_module_map_lists_every_module():
    listed = text(DOCS / "developers" / "module-map.md")
    modules = [path for path in PACKAGE.rglob("*.py") if path.name != "__init__.py"]
    missing = [where(path) for path in modules if not re.search(rf"\b{re.escape(path.name)}\b", listed)]
    assert not missing, f"not in docs/developers/module-map.md: {missing}"


def test_the_test_inventory_lists_every_test_file():
    listed = text(DOCS / "developers" / "tests.md")
    files = [path.relative_to(TESTS).as_posix() for path in TESTS.rglob("test_*.py")]
    missing = [name for name in files if f"`{name}`" not in listed]
    assert not missing, f"not in docs/developers/tests.md: {missing}"


# what make bench and make eval write: named by the docs, never committed
GENERATED = ("benchmarks/results/", "eval/results/")


def test_source_files_the_docs_name_exist():
    roots = {
        "norfab_hermes": ROOT,
        "tests": ROOT,
        "examples": ROOT,
        "benchmarks": ROOT,
        "worker": PACKAGE,
        "nfcli": PACKAGE,
    }
    missing = []
    for path in PAGES:
        for quoted in re.findall(
            r"`((?:norfab_hermes|tests|examples|benchmarks|worker|nfcli)/[\w/.-]+\.(?:py|yaml|md))`", text(path)
        ):
            if not quoted.startswith(GENERATED) and not (roots[quoted.split("/")[0]] / quoted).exists():
                missing.append(f"{where(path)}: {quoted}")
    assert not missing, f"no such file: {missing}"
