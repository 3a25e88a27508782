"""The unit layer stays a unit layer: its modules load neither Hermes nor the worker's NorFab tasks."""

import subprocess
import sys
from pathlib import Path

from .conftest import HERMES_PACKAGES, WIRING

UNIT = Path(__file__).resolve().parent


def test_the_unit_modules_import_no_hermes_and_no_norfab_tasks():
    """Importing every unit test module, in a fresh interpreter, loads no Hermes module and no task mixin."""
    modules = sorted(f"unit.{path.stem}" for path in UNIT.glob("test_*.py"))
    code = (
        "import importlib, sys; "
        f"[importlib.import_module(m) for m in {modules!r}]; "
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {sorted(HERMES_PACKAGES)!r} "
        f"or m.startswith({WIRING!r})))"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=UNIT.parent, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]", done.stdout
