"""
The port through which Hermes-facing code (plugin hooks, tool handlers, the
platform adapter) reaches the running host.

Hermes loads the plugin and builds adapters itself, so they cannot be handed
the host. The host binds itself here when its gateway starts and unbinds
when it stops; a hook reads :func:`current` once and uses that value for the
whole call, so a stop in between never leaves it half way between two hosts.
Nothing here imports the host: the dependency points from host to port.
"""

import threading
from typing import Any, Callable, Dict, List, Optional, Protocol, TypeVar


class RunPort(Protocol):
    """What hooks may do with a run in flight."""

    @property
    def session_key(self) -> str: ...

    @property
    def interactive(self) -> bool: ...

    provider_errors: List[Dict[str, Any]]

    def event(self, message: str, **kwargs: Any) -> None: ...

    def record_tool_call(self, summary: Any) -> None: ...

    def expect_request(self, model: Optional[str], prompt_tokens: int) -> None: ...

    def count_usage(self, model: Optional[str], prompt: int, completion: int) -> None: ...


R = TypeVar("R", bound=RunPort)  # the host's own run type, handed back to it as it gave it


class HostPort(Protocol[R]):
    """What Hermes-facing code may ask of the host."""

    def run_for_session_key(self, session_key: str) -> Optional[R]: ...

    def tune_agent(self, run: R) -> None: ...

    def tool_refusal(self, agent: str, tool: str) -> Optional[str]: ...

    def tool_spec(self, agent: str, name: str) -> Optional[Any]: ...

    def call_tool(
        self, spec: Any, arguments: Dict[str, Any], run: Optional[R], interrupted: Callable[[], bool]
    ) -> str: ...

    def ask_operator(self, session_key: str, question: str, default: Any) -> Any: ...

    def secrets(self) -> List[str]: ...


_host: Optional[HostPort[Any]] = None
_lock = threading.Lock()


def bind(host: HostPort[Any]) -> None:
    """Make ``host`` the one Hermes-facing code reaches (one host per worker process)."""
    global _host
    with _lock:
        if _host is not None and _host is not host:
            raise RuntimeError("another hermes host is already running in this process")
        _host = host


def unbind(host: HostPort[Any]) -> None:
    global _host
    with _lock:
        if _host is host:
            _host = None


def current() -> Optional[HostPort[Any]]:
    """The running host, or None while none runs (starting, stopped)."""
    return _host
