"""
The shape that keeps the package livable: the client side never loads the
worker or Hermes, only the Hermes room imports Hermes, the eval harness is
client side, and no module of the package imports another in a circle.
"""

import ast
import subprocess
import sys
from importlib.metadata import distribution
from pathlib import Path

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


def test_only_the_hermes_room_imports_hermes():
    offenders = {
        name: sorted(m for m in imports(path) if m.split(".")[0] in HERMES_PACKAGES)
        for name, path in MODULES.items()
        if HERMES_ROOM not in path.parents
    }
    assert not {name: found for name, found in offenders.items() if found}


def test_the_package_has_no_import_cycle():
    graph = {name: {m for m in imports(path) if m in MODULES and m != name} for name, path in MODULES.items()}
    # a package's __init__ is imported with any of its modules; it is not a dependency in itself
    graph = {name: {m for m in deps if not name.startswith(m + ".")} for name, deps in graph.items()}
    visiting, done, cycles = [], set(), []

    def visit(name: str) -> None:
        if name in visiting:
            cycles.append(visiting[visiting.index(name):] + [name])
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
        name: sorted(m for m in imports(path) if m.startswith("norfab_hermes.worker") or m.split(".")[0] in HERMES_PACKAGES)
        for name, path in MODULES.items()
        if EVAL_ROOM in path.parents
    }
    assert set(offenders) >= {"norfab_hermes.eval.cli", "norfab_hermes.eval.runner"}
    assert not {name: found for name, found in offenders.items() if found}


def test_the_client_side_never_loads_the_worker_or_hermes():
    # NorFab's task registry is process-global: worker modules in a client process leak tasks into workers
    code = (
        "import sys, norfab_hermes.nfcli_shell, norfab_hermes.routing, norfab_hermes.models, norfab_hermes.eval.cli; "
        f"bad = [m for m in sys.modules if m.split('.')[0] in {sorted(HERMES_PACKAGES)!r} "
        "or m.startswith('norfab_hermes.worker')]; "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
