"""
The worker side of the hermes service: only ever imported in a hermes worker
process. ``HermesWorker`` is loaded lazily, so that importing a submodule
(e.g. for tests) does not register its NorFab tasks.
"""

from typing import Any


def __getattr__(name: str) -> Any:
    if name == "HermesWorker":  # "norfab_hermes.worker:HermesWorker" in inventories and entry points
        from .hermes_worker import HermesWorker

        return HermesWorker
    raise AttributeError(name)
