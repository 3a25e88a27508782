"""
A FakeNOS worker for labs and tests: NorFab's own, plus device models written in Python.

NorFab's FakeNOS worker loads device models (``nos_plugins``) as YAML: every
command has one fixed output. Some lab stories and tests need devices whose
output changes between polls (counters that grow, a link that flaps, a peering that
recovers after it is cleared). FakeNOS itself runs Python device models; this
worker hands it the fetched ``.py`` file instead of parsing it as YAML.
Everything else is NorFab's FakeNOS worker unchanged.
"""

import logging
from typing import Any, List

import yaml
from norfab.workers.fakenos_worker.fakenos_worker import FakeNOSWorker

log = logging.getLogger(__name__)


class LabFakeNOSWorker(FakeNOSWorker):
    """FakeNOS worker whose ``nos_plugins`` may also be Python device models (``nf://...py``)."""

    def call_network(self, network: str, method: str, *args: Any, timeout: float = 180, **kwargs: Any) -> Any:
        """NorFab's, waiting longer: its 10 s are too few for a network of 80 devices to start on a busy host."""
        return super().call_network(network, method, *args, timeout=timeout, **kwargs)

    def load_nos_plugins(self) -> List[Any]:
        loaded: List[Any] = []
        for name, url in (self.fakenos_inventory.get("nos_plugins") or {}).items():
            python = str(url).endswith(".py")
            # a Python model is loaded by FakeNOS from a local file: the fetched copy's path
            fetched = self.fetch_file(url, read=not python)
            if fetched is None:
                log.error(f"{name} - plugin {url} could not be fetched")
                continue
            loaded.append(fetched if python else yaml.safe_load(fetched))
        return loaded
