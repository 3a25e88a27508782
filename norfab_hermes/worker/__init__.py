"""
The worker side of the hermes service: only ever imported in a hermes worker
process. ``HermesWorker`` is loaded lazily, so that importing a submodule
(e.g. for tests) does not register its NorFab tasks, and so that a client-only
install (without the ``worker`` extra) fails with the fix, not a missing module.
"""

import importlib.metadata
from typing import Any, List

# what `norfab-hermes[worker]` adds to the client side
WORKER_DISTRIBUTIONS = ("hermes-agent", "jsonschema")
WORKER_INSTALL = 'uv pip install --override worker-overrides.txt "norfab-hermes[worker]"'


def missing_worker_distributions() -> List[str]:
    missing = []
    for name in WORKER_DISTRIBUTIONS:
        try:
            importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            missing.append(name)
    return missing


def __getattr__(name: str) -> Any:
    if name == "HermesWorker":  # "norfab_hermes.worker:HermesWorker" in inventories and entry points
        missing = missing_worker_distributions()
        if missing:
            raise ImportError(
                f"the hermes worker needs {', '.join(missing)}, not installed in this environment: "
                f"install the worker side with '{WORKER_INSTALL}' (see docs/operations.md)"
            )
        from .hermes_worker import HermesWorker

        return HermesWorker
    raise AttributeError(name)
