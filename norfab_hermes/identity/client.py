"""
The client's key: where the nf# shell and the Python client find the SSH key
they sign requests with (one place: the ``NORFAB_HERMES_KEY`` environment
variable), and the signed arguments of one job.
"""

import os
from pathlib import Path
from typing import Any, Dict, List, Optional

from .proof import mint
from .signatures import Signer, signer_for

KEY_ENV = "NORFAB_HERMES_KEY"  # path of the operator's private key (or its .pub, when ssh-agent holds it)


def configured_signer() -> Optional[Signer]:
    """The signer of ``NORFAB_HERMES_KEY`` (ssh-agent first, then the key file); None when it is not set."""
    path = os.environ.get(KEY_ENV)
    return signer_for(Path(path))[0] if path else None


def signed(
    signer: Optional[Any],
    client: str,
    task: str,
    workers: List[str],
    kwargs: Dict[str, Any],
    subject: Optional[str] = None,
) -> Dict[str, Any]:
    """``kwargs`` with a proof for this job added; unchanged without a signer (a worker without operators)."""
    if signer is None:
        return kwargs
    return {**kwargs, "proof": mint(signer, task, workers, kwargs, client, subject)}
