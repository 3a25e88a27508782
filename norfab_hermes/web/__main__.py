"""
``python -m norfab_hermes.web``: the hermes console against a running broker,
and the grant an operator signs in with.

    python -m norfab_hermes.web --inventory inventory.yaml            (http://127.0.0.1:9006/hermes)
    python -m norfab_hermes.web grant --operator lead http://127.0.0.1:9006/hermes/signin/CODE

The first reads the broker's endpoint and keys from a NorFab inventory, the
way ``nfcli`` does, and starts no broker or worker. The second signs, with
the operator's key (``--key``, else ``NORFAB_HERMES_KEY``), a grant for the
key the console made for one browser's sign-in, and prints the one-time URL
that signs that browser in.
"""

import argparse
import asyncio
import json
import os
import signal
import sys
import urllib.request
from pathlib import Path
from typing import List, Optional
from urllib.parse import quote

from ..identity.client import KEY_ENV
from ..identity.grant import GRANT_LIFETIME, make_grant
from ..identity.signatures import SignatureError, signer_for

GRANT = "grant"
HOST, PORT = "127.0.0.1", 9006
CLIENT_NAME = "hermes-web"


def main(argv: Optional[List[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == [GRANT]:
        return grant(argv[1:])
    parser = argparse.ArgumentParser(prog="python -m norfab_hermes.web", description=__doc__.split("\n\n")[0])
    parser.add_argument("--inventory", "-i", default="inventory.yaml", help="NorFab inventory naming the broker")
    parser.add_argument("--host", default=HOST, help=f"address to listen on (default {HOST}: this host only)")
    parser.add_argument("--port", type=int, default=PORT, help=f"port to listen on (default {PORT})")
    parser.add_argument("--name", default=CLIENT_NAME, help=f"the console's NorFab client name (default {CLIENT_NAME})")
    parser.add_argument(
        "--allow-host",
        action="append",
        default=[],
        help="another Host header to answer, e.g. the name:port a reverse proxy forwards (repeatable); "
        "its address and this host's loopback names are answered",
    )
    options = parser.parse_args(argv)
    asyncio.run(serve(options.inventory, options.host, options.port, options.name, options.allow_host))
    return 0


async def serve(inventory: str, host: str, port: int, name: str, allow: List[str]) -> None:
    """Run the console until SIGINT or SIGTERM; its NorFab client is destroyed on the way out."""
    from norfab.core.nfapi import NorFab

    from .server import console_server

    nf = NorFab(inventory=inventory)
    client = nf.make_client(name=name)
    if client is None:
        raise SystemExit(f"could not make a NorFab client from {inventory}")
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for number in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(number, stop.set)
    try:
        async with console_server(client, host, port, allow) as url:
            print(f"hermes console on {url} (NorFab client {name})", flush=True)
            await stop.wait()
    finally:
        client.destroy()


def grant(argv: List[str]) -> int:
    """Sign a console sign-in's key with the operator's key; print the one-time sign-in URL."""
    parser = argparse.ArgumentParser(
        prog=f"python -m norfab_hermes.web {GRANT}",
        description="Grant a console sign-in: your key vouches for the key the console made for it",
    )
    parser.add_argument("url", help="the sign-in URL the console's sign-in page shows")
    parser.add_argument("--operator", required=True, help="your operator name, as the workers' operators name you")
    parser.add_argument(
        "--key", help=f"your private key file, or its .pub when ssh-agent holds it (default ${KEY_ENV})"
    )
    parser.add_argument(
        "--hours", type=float, default=GRANT_LIFETIME / 3600, help="how long the session may last (at most 12)"
    )
    options = parser.parse_args(argv)
    key = options.key or os.environ.get(KEY_ENV)
    if not key:
        print(f"error: name your key with --key or {KEY_ENV}", file=sys.stderr)
        return 1
    try:
        with urllib.request.urlopen(f"{options.url.rstrip('/')}/key", timeout=10) as answer:
            asked = json.load(answer)
        signer, _ = signer_for(Path(key))
        made = make_grant(signer, options.operator, asked["key"], asked["console"], options.hours * 3600)
    except (OSError, ValueError, KeyError, SignatureError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(f"{options.url.rstrip('/')}?grant={quote(made)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
