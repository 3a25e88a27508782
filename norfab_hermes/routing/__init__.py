"""
Client side: the hermes service from the ``nf#`` shell and from Python.

``Router`` resolves agents, sessions, runs and approvals to the one worker
that serves or owns them (``router``); ``Hermes(client)`` is the Python
helper over it (``client``)::

    from norfab_hermes.routing import Hermes

    hermes = Hermes(nf.client)
    reply = hermes.invoke("interfaces", "Check interfaces on r1", workers="hermes-lab-*")
    reply["result"]["response"], reply["result"]["session_id"], reply["result"]["worker"]
"""

from .client import Hermes
from .router import (
    BROKER_TIMEOUT,
    COMMAND_JOB_TIMEOUT,
    GLOB_CHARS,
    INVOKE_JOB_TIMEOUT,
    JOB_MARGIN,
    SERVICE,
    Router,
    RoutingError,
    Selector,
    Target,
    invoke_job_timeout,
)

__all__ = [
    "BROKER_TIMEOUT",
    "COMMAND_JOB_TIMEOUT",
    "GLOB_CHARS",
    "INVOKE_JOB_TIMEOUT",
    "JOB_MARGIN",
    "Hermes",
    "Router",
    "RoutingError",
    "SERVICE",
    "Selector",
    "Target",
    "invoke_job_timeout",
]
