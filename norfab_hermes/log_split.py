"""
Keep Hermes' log records and NorFab's apart in one worker process.

Hermes attaches its file handlers (``<instance root>/logs/agent.log``,
``errors.log``, ``gateway.log``) to the root logger through one queue handler,
and NorFab attaches the worker's JSONL log to the root logger too, so by
default each log fills with the other's records. Here the Hermes queue
handler moves from the root logger to the Hermes package loggers, which stop
propagating: Hermes records reach only Hermes' files, everything else only
NorFab's.
"""

import logging
from importlib.metadata import distribution
from pathlib import Path
from typing import List

# loggers Hermes uses outside its own packages: directory plugins and its
# model SDK
EXTRA_HERMES_LOGGERS = ["hermes_plugins", "openai"]


def hermes_logger_names() -> List[str]:
    top_level = distribution("hermes-agent").read_text("top_level.txt") or ""
    return sorted({*top_level.split(), *EXTRA_HERMES_LOGGERS})


def split_logs(hermes_home: Path) -> None:
    """Initialise Hermes logging now, then detach it from the root logger."""
    import hermes_logging

    hermes_logging.setup_logging(hermes_home=hermes_home, mode="gateway")
    root = logging.getLogger()
    queue_handlers = [h for h in root.handlers if getattr(h, "_hermes_queue", False)]
    for handler in queue_handlers:
        root.removeHandler(handler)
    for name in hermes_logger_names():
        logger = logging.getLogger(name)
        logger.propagate = False
        for handler in queue_handlers:
            if handler not in logger.handlers:
                logger.addHandler(handler)
