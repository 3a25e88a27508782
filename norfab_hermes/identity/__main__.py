"""
``python -m norfab_hermes.identity``: mint a proof for one request, for REST
and MCP callers (pass the printed string as the task's ``proof`` argument),
or check an exported audit log offline.

    python -m norfab_hermes.identity --key ~/.ssh/id_ed25519 --task invoke \\
        --worker hermes-worker-1 --client fastapi-worker-1-NFPClient \\
        --args '{"agent": "interfaces", "instructions": "check Gi1"}'

    python -m norfab_hermes.identity verify-audit hermes-audit.jsonl --operators operators.yaml
"""

import argparse
import json
import sys
from pathlib import Path
from typing import List, Optional

from ..errors import InventoryError
from .audit import verify_export_file
from .proof import LIFETIME, mint
from .signatures import SignatureError, signer_for

VERIFY = "verify-audit"


def main(argv: Optional[List[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == [VERIFY]:
        return verify_audit(argv[1:])
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


def verify_audit(argv: List[str]) -> int:
    """Check an exported audit log: 0 when every entry verifies, 1 naming each that does not, 2 on bad input."""
    parser = argparse.ArgumentParser(
        prog=f"python -m norfab_hermes.identity {VERIFY}",
        description="Check an exported audit log (nf# hermes audit export file PATH) offline: hashes, links "
        "and the operators' signatures",
    )
    parser.add_argument("file", type=Path, help="the exported audit log, one JSON entry a line")
    parser.add_argument(
        "--operators",
        type=Path,
        help="operators YAML file (as the worker reads it; keep retired keys in it for old entries): "
        "each signature must be its operator's key; without it signatures are checked alone",
    )
    options = parser.parse_args(argv)
    try:
        count, problems = verify_export_file(options.file, options.operators)
    except (OSError, InventoryError, SignatureError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    for problem in problems:
        print(problem)
    keys = "the operators' keys" if options.operators else "no operators file (signatures checked alone)"
    verdict = "intact" if not problems else f"{len(problems)} problems"
    print(f"{options.file}: {count} entries, {verdict}; checked against {keys}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
