"""
``python -m norfab_hermes.identity``: mint a proof for one request, for REST
and MCP callers (pass the printed string as the task's ``proof`` argument).

    python -m norfab_hermes.identity --key ~/.ssh/id_ed25519 --task invoke \\
        --worker hermes-worker-1 --client fastapi-worker-1-NFPClient \\
        --args '{"agent": "interfaces", "instructions": "check Gi1"}'
"""

import argparse
import json
import sys
from pathlib import Path
from typing import List, Optional

from .proof import LIFETIME, mint
from .signatures import SignatureError, signer_for


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m norfab_hermes.identity", description=__doc__.split("\n\n")[0])
    parser.add_argument("--key", required=True, help="private key file, or its .pub when ssh-agent holds the key")
    parser.add_argument("--task", required=True, help="hermes task, e.g. invoke, approve")
    parser.add_argument("--worker", required=True, action="append", help="worker the job goes to (repeatable)")
    parser.add_argument("--client", required=True, help="NorFab client name that sends the job: <worker>-NFPClient")
    parser.add_argument("--args", default="{}", help="the task's arguments as JSON, exactly as sent")
    parser.add_argument("--subject", help="approve and deny: the approval's change_digest (or arguments_digest)")
    parser.add_argument("--lifetime", type=float, default=LIFETIME, help="seconds the proof is valid (at most 300)")
    options = parser.parse_args(argv)
    try:
        arguments = json.loads(options.args)
        signer, _ = signer_for(Path(options.key))
        print(mint(signer, options.task, options.worker, arguments, options.client, options.subject, options.lifetime))
    except (SignatureError, OSError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
