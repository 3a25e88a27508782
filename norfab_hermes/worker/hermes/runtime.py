"""
The Hermes runtime of one worker process: its instance root
(``HERMES_HOME``), the Hermes import, the log and console split, and the
multiplexed ``GatewayRunner`` on an asyncio loop in a thread of its own.

NorFab job threads hand coroutines to the loop with :meth:`submit` and wait
on the returned future.
"""

import asyncio
import concurrent.futures
import logging
import os
import sys
import threading
from pathlib import Path
from typing import Any, Callable, Coroutine, Dict, Iterable, List, Optional, TypeVar

from ..files import write_config, write_file
from . import compat, log_split, patches
from .gateway import Gateway

T = TypeVar("T")

log = logging.getLogger(__name__)

START_TIMEOUT = 120.0
STOP_TIMEOUT = 15.0
# Hermes modules that freeze HERMES_HOME when first imported
FREEZING_MODULES = ("run_agent", "gateway.run", "hermes_state", "cron.jobs", "model_tools")


class HermesRuntime:
    """
    Hermes inside a NorFab worker.

    Args:
        worker_name: for log messages.
        root: the instance root, Hermes' ``HERMES_HOME``.
        secrets: returns the secret values masked in Hermes' logs and console.
    """

    def __init__(
        self, worker_name: str, root: Path, secrets: Callable[[], Iterable[str]], log_level: str = "WARNING"
    ) -> None:
        self.worker_name = worker_name
        self.root = Path(root)
        self.secrets = secrets
        self.log_level = log_level
        self.loop: Optional[asyncio.AbstractEventLoop] = None
        self._runner: Any = None  # Hermes' GatewayRunner: reached through ``gateway`` only
        self._gateway: Optional[Gateway] = None
        self.warnings: List[str] = []
        self._thread: Optional[threading.Thread] = None
        self._started = threading.Event()
        self._start_error: Optional[str] = None
        self._stdout: Any = None  # the process's stdout while Hermes' console file replaces it

    def prepare(self, root_config: Dict[str, Any]) -> None:
        """Write the instance root's config and import Hermes, outside any profile scope."""
        loaded = [name for name in FREEZING_MODULES if name in sys.modules]
        if loaded:
            raise RuntimeError(
                f"Hermes modules {loaded} were imported before the hermes worker set HERMES_HOME; "
                "do not import Hermes in the NorFab parent process"
            )
        self.root.mkdir(parents=True, exist_ok=True)
        os.environ["HERMES_HOME"] = str(self.root)
        write_config(self.root / "config.yaml", root_config)
        # Hermes loads the root .env over the process environment at import;
        # the root holds no secrets, so it stays empty
        write_file(self.root / ".env", "")
        environ = dict(os.environ)
        log_split.split_logs(self.root, self.secrets, self.log_level)
        # Hermes prints spinners and status lines to stdout; in a worker that
        # shares the operator's terminal (nfcli local mode) they would garble
        # the shell, so they go to a file of the instance root
        self._stdout = sys.stdout
        sys.stdout = log_split.ScrubbingConsole(self.root / "logs" / "console.log", self.secrets)
        patches.import_hermes()
        for name, value in environ.items():
            if os.environ.get(name) != value:
                os.environ[name] = value
        tls_problem = patches.check_ca_bundle_once()
        if tls_problem:
            self.warnings.append(f"TLS CA bundle: {tls_problem}")

    def start_gateway(self, max_concurrent_runs: int, before_start: Callable[[Gateway], None]) -> None:
        """Start the gateway on its loop thread; ``before_start(gateway)`` runs first, on that thread."""
        self._thread = threading.Thread(
            target=self._serve, args=(max_concurrent_runs, before_start), name="hermes-gateway-loop", daemon=True
        )
        self._thread.start()
        if not self._started.wait(START_TIMEOUT):
            raise RuntimeError(f"Hermes gateway did not start within {START_TIMEOUT:.0f}s")
        if self._start_error:
            raise RuntimeError(f"Hermes gateway failed to start: {self._start_error}")

    def _serve(self, max_concurrent_runs: int, before_start: Callable[[Gateway], None]) -> None:
        self.loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self.loop)
        try:
            self._runner = compat.make_runner()
            compat.size_turn_pool(self._runner, max_concurrent_runs)
            self._gateway = Gateway(self._runner)
            before_start(self._gateway)
            self.loop.run_until_complete(self._runner.start())
        except Exception as error:
            log.exception(f"{self.worker_name} - Hermes gateway failed to start")
            self._start_error = repr(error)
            self._started.set()
            self.loop.close()
            return
        self._started.set()
        self.loop.run_forever()
        self.loop.run_until_complete(self.loop.shutdown_default_executor())
        self.loop.close()

    @property
    def gateway(self) -> Gateway:
        """The running gateway (it runs from ``start_gateway`` on)."""
        if self._gateway is None:
            raise RuntimeError(f"the Hermes gateway of worker {self.worker_name} is not started")
        return self._gateway

    def submit(self, coroutine: Coroutine[Any, Any, T]) -> "concurrent.futures.Future[T]":
        """Run ``coroutine`` on the gateway loop; wait on the returned future from any thread."""
        if self.loop is None:
            raise RuntimeError(f"the Hermes gateway of worker {self.worker_name} is not started")
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop)

    def send(
        self, agent: str, text: str, chat_id: str, on_text: Optional[Callable[[str, str], None]] = None
    ) -> "concurrent.futures.Future[Any]":
        """Send ``text`` to the agent's gateway chat; the future gives the finished adapter turn."""

        async def turn() -> Any:
            adapter = self.gateway.adapter(agent)
            if adapter is None:
                raise RuntimeError(f"agent '{agent}' has no NorFab adapter in the gateway (stopped?)")
            submitted = await adapter.submit(text, chat_id, agent, on_text)
            return await submitted.done

        return self.submit(turn())

    def stop(self) -> None:
        """Stop the gateway and its loop, give the process its stdout back."""
        if self.loop and self._runner and self.loop.is_running():
            try:
                self.submit(self._runner.stop()).result(STOP_TIMEOUT)
            except Exception as error:
                log.error(f"{self.worker_name} - Hermes gateway stop failed: {error!r}")
            self.loop.call_soon_threadsafe(self.loop.stop)
        if self._thread:
            self._thread.join(STOP_TIMEOUT)
        if self._stdout is not None:
            sys.stdout, self._stdout = self._stdout, None
