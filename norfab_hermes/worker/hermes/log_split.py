"""
Keep Hermes' log records and NorFab's apart in one worker process, and keep
secrets out of both.

Hermes attaches its file handlers (``<instance root>/logs/agent.log``,
``errors.log``, ``gateway.log``) to the root logger through one queue handler,
and NorFab attaches the worker's JSONL log to the root logger too, so by
default each log fills with the other's records. Here the Hermes queue
handler moves from the root logger to the Hermes package loggers, which stop
propagating: Hermes records reach only Hermes' files, everything else only
NorFab's.

Hermes masks secrets in its logs by their shape only (``sk-...``), and prints
provider errors - which may quote the API key - to stdout unmasked. Its file
handlers and the console file therefore mask the worker's known secret
values, and secret-looking configuration text, as they write.
"""

import io
import logging
from importlib.metadata import distribution
from pathlib import Path
from typing import Callable, Iterable, List

from ...safety.redact import scrub
from . import compat

# loggers Hermes uses outside its own packages: directory plugins and its
# model SDK
EXTRA_HERMES_LOGGERS = ["hermes_plugins", "openai"]

Secrets = Callable[[], Iterable[str]]


def hermes_logger_names() -> List[str]:
    top_level = distribution("hermes-agent").read_text("top_level.txt") or ""
    return sorted({*top_level.split(), *EXTRA_HERMES_LOGGERS})


class ScrubbingFormatter(logging.Formatter):
    """Formats with Hermes' own formatter, then masks secrets (tracebacks included)."""

    def __init__(self, inner: logging.Formatter, secrets: Secrets) -> None:
        super().__init__()
        self.inner = inner
        self.secrets = secrets

    def format(self, record: logging.LogRecord) -> str:
        return scrub(self.inner.format(record), self.secrets())


class ScrubbingConsole(io.TextIOBase):
    """A line-buffered text file that masks secrets in everything written to it."""

    def __init__(self, path: Path, secrets: Secrets) -> None:
        self.file = open(path, "a", buffering=1, encoding="utf-8")
        self.secrets = secrets

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self.file.write(scrub(text, self.secrets()))
        return len(text)

    def flush(self) -> None:
        self.file.flush()

    def close(self) -> None:
        self.file.close()
        super().close()


def split_logs(hermes_home: Path, secrets: Secrets, level: str = "WARNING") -> None:
    """Initialise Hermes logging now, detach it from the root logger, mask secrets in its files.

    Records below ``level`` are not even made: at INFO Hermes logs several
    records per turn, each formatted and masked.
    """
    import hermes_logging

    hermes_logging.setup_logging(hermes_home=hermes_home, mode="gateway")
    root = logging.getLogger()
    queue_handlers = [h for h in root.handlers if compat.is_hermes_queue_handler(h)]
    for handler in queue_handlers:
        root.removeHandler(handler)
    for name in hermes_logger_names():
        logger = logging.getLogger(name)
        logger.propagate = False
        logger.setLevel(level)
        for handler in queue_handlers:
            if handler not in logger.handlers:
                logger.addHandler(handler)
    for handler in hermes_logging.rotating_file_handlers():
        if not isinstance(handler.formatter, ScrubbingFormatter):
            handler.setFormatter(ScrubbingFormatter(handler.formatter or logging.Formatter(), secrets))
