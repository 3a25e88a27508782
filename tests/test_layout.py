"""
The shape that keeps the package livable: each room imports only the rooms
its rule allows (ROOMS), the client side never loads the worker or Hermes,
only the Hermes room imports Hermes, the eval harness is client side, and no
module of the package imports another in a circle.
"""

import ast
import subprocess
import sys
from importlib.metadata import distribution
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "norfab_hermes"
HERMES_ROOM = PACKAGE / "worker" / "hermes"
EVAL_ROOM = PACKAGE / "eval"
HERMES_PACKAGES = set(distribution("hermes-agent").read_text("top_level.txt").split())


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> set:
    """Every module ``path`` imports, at the top or inside functions, relative imports resolved."""
    package = module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[: len(package) - node.level + 1] + ([base] if base else []))
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


MODULES = {module_name(path): path for path in PACKAGE.rglob("*.py")}


# Which room may import which (besides itself). A room is a package or a
# module of norfab_hermes, and below worker/ of the worker (see room_of).
#
# | room                 | may import                                                         |
# |----------------------|--------------------------------------------------------------------|
# | errors, safety       | nothing of the package                                             |
# | identity             | models, errors, safety (proof checking: used by workers and clients)|
# | norfab_compat        | errors, identity (the verified operator a task acts for)           |
# | models               | errors, safety                                                     |
# | testing              | models, errors, safety                                             |
# | client side: routing,| the pure rooms (models, errors, safety, norfab_compat) and the     |
# |   nfcli_shell, nfcli,|   client side; never the worker, never Hermes                      |
# |   eval, web          |   (eval also testing: it runs the shipped lab and scripted model;  |
# |                      |   nfcli/ never nfcli_shell, the mount point that imports it)       |
# | worker/files.py      | nothing of the package                                             |
# | worker/hermes/       | the pure rooms, worker/files.py                                    |
# | worker/changes/      | the pure rooms, files (the change envelope's state)                |
# | worker/records/      | the pure rooms (the durable records: SQLite, knows no run)         |
# | worker/evidence/     | the pure rooms, files                                              |
# | worker/tools/        | the pure rooms, changes, evidence (it reaches NorFab through the   |
# |                      |   worker's client)                                                 |
# | worker/agents/       | the pure rooms, files, hermes, tools (never runs, schedules, ...)  |
# | worker/sessions/     | the pure rooms, files, hermes                                      |
# | worker/runs/         | the pure rooms, files, hermes, tools, agents, sessions, records    |
# | worker/schedules/    | the pure rooms, files, hermes, tools, agents, sessions, runs,      |
# |                      |   records, evidence                                                |
# | worker/memory/       | the pure rooms, hermes                                             |
# | worker/handover/     | the pure rooms, schedules                                          |
# | worker/host.py,      | every room below it: the pure rooms and files ... handover         |
# |   worker/operations.py (the host's mixin: what the tasks ask)                              |
# | worker/tasks/        | the pure rooms and the worker rooms below host.py but hermes       |
# | worker wiring        | everything in the worker (hermes_worker.py, worker/__init__.py)    |
#
# So nothing below worker/host.py imports host.py, hermes_worker.py or
# worker/tasks/; the tasks reach Hermes only through the host.
PURE = {"errors", "safety", "models", "norfab_compat", "identity"}
CLIENT = {"routing", "nfcli_shell", "nfcli", "eval", "web"}
BELOW_HOST = {
    "files",
    "hermes",
    "changes",
    "records",
    "evidence",
    "tools",
    "agents",
    "sessions",
    "runs",
    "schedules",
    "memory",
    "handover",
    "notify",
    "approvals",
}
ROOMS = {
    "errors": set(),
    "safety": set(),
    "norfab_compat": {"errors", "identity"},
    "identity": {"models", "errors", "safety"},
    "models": {"errors", "safety"},
    "testing": {"models", "errors", "safety"},
    **{room: PURE | CLIENT for room in CLIENT},
    "nfcli": PURE | CLIENT - {"nfcli_shell"},
    "eval": PURE | CLIENT | {"testing"},
    "files": set(),
    "hermes": PURE | {"files"},
    "changes": PURE | {"files"},
    "records": PURE,
    "evidence": PURE | {"files"},
    "approvals": PURE | {"records"},  # below the tools that ask and the runs that wait: it knows them by protocol
    "tools": PURE | {"changes", "evidence", "approvals"},
    "agents": PURE | {"files", "hermes", "tools"},
    "sessions": PURE | {"files", "hermes"},
    "runs": PURE | {"files", "hermes", "tools", "agents", "sessions", "records"},
    "schedules": PURE | {"files", "hermes", "tools", "agents", "sessions", "runs", "records", "evidence"},
    "memory": PURE | {"hermes"},
    "handover": PURE | {"schedules"},
    "notify": PURE | {"records"},  # its outbox is a SQLite file like the records'; told by the rooms above it
    "host": PURE | BELOW_HOST,
    "tasks": PURE | (BELOW_HOST - {"hermes"}) | {"host"},  # the host they call, for its type
    "wiring": PURE | BELOW_HOST | {"host", "tasks"},
    "package": set(),  # norfab_hermes/__init__.py stays import-light
}
# worker modules that are rooms of their own; any other worker.<name> is the room <name>
WORKER_MODULES = {
    "worker": "wiring",
    "worker.hermes_worker": "wiring",
    "worker.host": "host",
    "worker.operations": "host",
    "worker.files": "files",
}


def room_of(module: str) -> str:
    """The room of a package module: its first part below norfab_hermes, or below worker."""
    parts = module.split(".")[1:]
    if not parts:
        return "package"  # norfab_hermes/__init__.py
    if parts[0] != "worker":
        return parts[0]
    return WORKER_MODULES.get(".".join(parts[:2])) or parts[1]


def room_imports() -> dict:
    """(importing module, imported module) pairs that cross rooms, by the importing room."""
    crossings: dict = {}
    for name, path in MODULES.items():
        for imported in sorted(m for m in imports(path) if m in MODULES and m != name):
            if name.startswith(imported + ".") or room_of(imported) == room_of(name):
                continue  # a package's __init__ comes with its modules
            crossings.setdefault(room_of(name), []).append((name, imported))
    return crossings


def test_every_module_is_in_a_room_with_rules():
    """A new package or module gets a row in ROOMS before it can import anything."""
    unplaced = sorted(f"{name} ({room_of(name)})" for name in MODULES if room_of(name) not in ROOMS)
    assert not unplaced, f"add these rooms to ROOMS in {Path(__file__).name}: {unplaced}"


@pytest.mark.parametrize("room", sorted(ROOMS))
def test_a_room_imports_only_the_rooms_its_rule_allows(room):
    """Each room imports only the rooms the ROOMS table lets it import."""
    allowed = ROOMS[room]
    bad = [f"{a} -> {b}" for a, b in room_imports().get(room, []) if room_of(b) not in allowed]
    assert not bad, f"room '{room}' may import only {sorted(allowed) or 'nothing of the package'}: {bad}"


def test_only_the_hermes_room_imports_hermes():
    """No module outside worker/hermes/ imports a Hermes package, at the top or inside a function."""
    offenders = {
        name: sorted(m for m in imports(path) if m.split(".")[0] in HERMES_PACKAGES)
        for name, path in MODULES.items()
        if HERMES_ROOM not in path.parents
    }
    assert not {name: found for name, found in offenders.items() if found}


def test_the_package_has_no_import_cycle():
    """No module of the package imports itself through others."""
    graph = {name: {m for m in imports(path) if m in MODULES and m != name} for name, path in MODULES.items()}
    # a package's __init__ is imported with any of its modules; it is not a dependency in itself
    graph = {name: {m for m in deps if not name.startswith(m + ".")} for name, deps in graph.items()}
    visiting, done, cycles = [], set(), []

    def visit(name: str) -> None:
        if name in visiting:
            cycles.append(visiting[visiting.index(name) :] + [name])
            return
        if name in done:
            return
        visiting.append(name)
        for dep in sorted(graph[name]):
            visit(dep)
        visiting.pop()
        done.add(name)

    for name in sorted(graph):
        visit(name)
    assert not cycles, cycles


def test_the_eval_room_imports_neither_the_worker_nor_hermes():
    # the harness drives agents through the public tasks, as any client does
    offenders = {
        name: sorted(
            m for m in imports(path) if m.startswith("norfab_hermes.worker") or m.split(".")[0] in HERMES_PACKAGES
        )
        for name, path in MODULES.items()
        if EVAL_ROOM in path.parents
    }
    assert set(offenders) >= {"norfab_hermes.eval.cli", "norfab_hermes.eval.runner"}
    assert not {name: found for name, found in offenders.items() if found}


def test_the_client_side_never_loads_the_worker_or_hermes():
    """Importing the shell, routing and models in a fresh interpreter loads no worker module and no Hermes."""
    # NorFab's task registry is process-global: worker modules in a client process leak tasks into workers
    code = (
        "import sys, norfab_hermes.nfcli_shell, norfab_hermes.routing, norfab_hermes.models, norfab_hermes.eval.cli, "
        "norfab_hermes.web.server, norfab_hermes.web.__main__; "
        f"bad = [m for m in sys.modules if m.split('.')[0] in {sorted(HERMES_PACKAGES)!r} "
        "or m.startswith('norfab_hermes.worker')]; "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr


# the modules that may reach private Hermes names (each covered by tests/test_compat.py)
HERMES_SEAMS = {"compat.py", "patches.py", "metering.py"}
# NorFab client internals that are not its API: only norfab_compat.py reaches them
NORFAB_INTERNALS = {"job_db", "job_futures", "outbound_queue", "file_transfers"}


def private_uses(path: Path, packages: set) -> list:
    """Private names of ``packages`` that ``path`` imports, or reads off a module it imported from them."""
    tree = ast.parse(path.read_text())
    bound, found = set(), []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            bound |= {a.asname or a.name.split(".")[0] for a in node.names if a.name.split(".")[0] in packages}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] in packages:
                found += [f"{node.module}.{a.name}" for a in node.names if a.name.startswith("_")]
                bound |= {a.asname or a.name for a in node.names}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in bound:
            if node.attr.startswith("_") and not node.attr.startswith("__"):
                found.append(f"{node.value.id}.{node.attr}")
    return found


def test_private_hermes_names_are_reached_only_in_the_compat_seam():
    """Hermes' private names live in compat (and patches, metering), each with its contract test."""
    offenders = {
        name: private_uses(path, HERMES_PACKAGES)
        for name, path in MODULES.items()
        if HERMES_ROOM in path.parents and path.name not in HERMES_SEAMS
    }
    assert not {name: found for name, found in offenders.items() if found}


def test_only_the_hermes_room_holds_the_gateway_runner():
    """Outside worker/hermes/ the gateway is its typed facade: no compat call and no runner there."""
    offenders = {}
    for name, path in MODULES.items():
        if HERMES_ROOM in path.parents:
            continue
        tree = ast.parse(path.read_text())
        found = [
            f"compat.{a.name}"
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and (node.module or "").endswith("hermes.compat")
            for a in node.names
            if not a.name.isupper()  # constants (PLATFORM) are not calls into Hermes
        ]
        found += [
            f"from {node.module} import compat"
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom)
            and (node.module or "").endswith("hermes")
            and "compat" in {a.name for a in node.names}
        ]
        found += [
            f"runtime.{n.attr}"
            for n in ast.walk(tree)
            if isinstance(n, ast.Attribute)
            and n.attr in ("runner", "_runner")
            and "runtime" in (getattr(n.value, "id", None), getattr(n.value, "attr", None))
        ]
        if found:
            offenders[name] = found
    assert not offenders


def test_norfab_internals_are_reached_only_in_norfab_compat():
    """NorFab's private names and client internals are used in norfab_compat.py alone, under its contract test."""
    offenders = {}
    for name, path in MODULES.items():
        if path.name == "norfab_compat.py":
            continue
        found = private_uses(path, {"norfab"})
        tree = ast.parse(path.read_text())
        found += [n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr in NORFAB_INTERNALS]
        if found:
            offenders[name] = found
    assert not offenders


def test_the_host_is_the_port_the_hermes_side_calls_and_each_protocol_holds_its_implementations():
    """The type checker holds the host to the port the plugin and adapter use, the run to what asking
    for an approval and a tool call read of it, the inbox and the inline prompt to the asking channel, the notifier to
    the approval channel, each tool kind's executor to ToolKind, and both records backends (their
    databases, transactions and reads) to the records' protocols: a method renamed or missing, or a
    signature that drifted, on either side fails here."""
    code = (
        "import sqlite3\n"
        "from typing import List\n"
        "from norfab_hermes.worker.host import HermesHost\n"
        "from norfab_hermes.worker.hermes.port import HostPort\n"
        "from norfab_hermes.worker.runs.run import Run\n"
        "from norfab_hermes.worker.approvals.channel import ApprovalChannel, AskChannel\n"
        "from norfab_hermes.worker.approvals.inbox import ApprovalInbox\n"
        "from norfab_hermes.worker.approvals.inline import InlinePrompt\n"
        "from norfab_hermes.worker.approvals.request import AskingRun\n"
        "from norfab_hermes.worker.notify.notifier import Notifier\n"
        "from norfab_hermes.worker.tools.calls import ToolRun\n"
        "from norfab_hermes.worker.tools.change import ChangeRunner\n"
        "from norfab_hermes.worker.tools.kinds import DelegateCalls, NorfabCalls, ToolKind\n"
        "from norfab_hermes.worker.tools.records import RecordsReader\n"
        "from norfab_hermes.worker.records import pg_batch\n"
        "from norfab_hermes.worker.records.db import Database\n"
        "from norfab_hermes.worker.records.pg import PgDatabase\n"
        "from norfab_hermes.worker.records.statements import Backend, Connection\n"
        "def port_of(host: HermesHost) -> HostPort[Run]:\n"
        "    return host\n"
        "def asking(run: Run) -> AskingRun:\n"
        "    return run\n"
        "def calling(run: Run) -> ToolRun:\n"
        "    return run\n"
        "def channels(inbox: ApprovalInbox, inline: InlinePrompt) -> List[AskChannel]:\n"
        "    return [inbox, inline]\n"
        "def told(notifier: Notifier) -> ApprovalChannel:\n"
        "    return notifier\n"
        "def kinds(a: NorfabCalls, b: ChangeRunner, c: DelegateCalls, d: RecordsReader) -> List[ToolKind]:\n"
        "    return [a, b, c, d]\n"
        "def sqlite(db: Database) -> Backend[sqlite3.Connection]:\n"
        "    return db\n"
        "def postgresql(db: PgDatabase) -> Backend[pg_batch.Connection]:\n"
        "    return db\n"
        "def statements(a: sqlite3.Connection, b: pg_batch.Connection, c: pg_batch.Reader) -> List[Connection]:\n"
        "    return [a, b, c]\n"
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--config-file=",
            "--ignore-missing-imports",
            "--follow-imports=silent",
            "-c",
            code,
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
