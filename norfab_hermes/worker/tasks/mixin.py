"""
What every task mixin reaches on the ``HermesWorker`` it is part of: declared
here for the type checker, set and defined by the worker (``hermes_worker.py``).
"""

from typing import Any, Dict, List, Optional

from ...identity import IdentityGate
from ...models import AgentDefinition
from ..host import HermesHost


class TaskMixin:
    name: str  # the worker's name (NorFab's)
    host: Optional[HermesHost]  # None until it started, or when it failed to
    identity: IdentityGate
    init_errors: List[str]
    hermes_inventory: Dict[str, Any]

    def running_host(self) -> HermesHost:
        """The host, or AgentUnavailable saying why the worker has none."""
        raise NotImplementedError

    def identity_line(self) -> str:
        raise NotImplementedError

    def reload_identity(self) -> None:
        raise NotImplementedError

    def fetch_definition(self, name: str, url: str, attempts: int = 1) -> AgentDefinition:
        raise NotImplementedError
