"""
A throwaway Matrix homeserver for tests: the real Synapse (the ``matrix-synapse``
package of the dev group) in a temporary directory, on 127.0.0.1 and a free
port, with a generated config made local and fast: SQLite, no federation, no
key servers, no registration but the shared-secret admin API, rate limits out
of the way. The Matrix channel is tested against what a homeserver really
does (sync tokens, edits, replies), not against a fake of it.

``synapse_server`` registers the users asked for, makes the first create a
room the others join, and yields a ``Homeserver``: its URL, the room and each
user's id and access token. On the way out the server (its process group) is
stopped and the directory removed; a failed start raises with the end of the
server's log, which lives in the directory while it runs (``Homeserver.log``).
"""

import hashlib
import hmac
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterator, Optional, Sequence

import yaml

from .embedded import free_port

SERVER_NAME = "localhost"
START_TIMEOUT = 60.0
# every limit a test could meet (messages, joins, registrations, logins) made unreachable
UNLIMITED = {"per_second": 10000, "burst_count": 10000}
RATE_LIMITS = (
    "rc_message",
    "rc_registration",
    "rc_login",
    "rc_joins",
    "rc_joins_per_room",
    "rc_invites",
    "rc_admin_redaction",
    "rc_3pid_validation",
    "rc_presence",
    "rc_delayed_event_mgmt",
    "rc_reports",
)


@dataclass(frozen=True)
class User:
    """A registered user: its full id (``@name:localhost``) and access token."""

    user_id: str
    access_token: str


@dataclass
class Homeserver:
    """A running Synapse: its base URL, the shared room, and the users by local name."""

    url: str
    room_id: str
    folder: Path
    users: Dict[str, User] = field(default_factory=dict)

    @property
    def log(self) -> Path:
        """The server's log file (in the temporary directory, removed with it)."""
        return self.folder / "homeserver.log"

    def log_tail(self, lines: int = 60) -> str:
        """The end of the server's log and of its output (where a crash before logging starts goes)."""
        tails = []
        for path in (self.log, self.folder / "stdout.log"):
            text = path.read_text(errors="replace").splitlines()[-lines:] if path.exists() else []
            tails.append(f"--- {path.name}:\n" + ("\n".join(text) or "(empty)"))
        return "\n".join(tails)

    def call(
        self, method: str, path: str, token: Optional[str] = None, body: Optional[Dict[str, Any]] = None
    ) -> Dict[str, Any]:
        """One client-server API call as ``token``'s user; its JSON reply (raises on an HTTP error, with its body)."""
        return _call(self.url, method, path, token, body)

    def register(self, name: str) -> User:
        """Register local user ``name`` through the shared-secret admin API and keep it in ``users``."""
        secret = _config(self.folder)["registration_shared_secret"]
        nonce = self.call("GET", "/_synapse/admin/v1/register")["nonce"]
        password = f"pw-{name}"
        # HMAC-SHA1 of nonce, user, password and "notadmin", NUL-separated (Synapse's admin register API)
        signed = b"\x00".join(part.encode() for part in (nonce, name, password, "notadmin"))
        mac = hmac.new(secret.encode(), signed, hashlib.sha1).hexdigest()
        reply = self.call(
            "POST",
            "/_synapse/admin/v1/register",
            body={"nonce": nonce, "username": name, "password": password, "admin": False, "mac": mac},
        )
        user = User(reply["user_id"], reply["access_token"])
        self.users[name] = user
        return user

    def messages(self, token: str, limit: int = 50) -> list:
        """The room's latest events, oldest first, as ``token``'s user reads them."""
        query = urllib.parse.urlencode({"dir": "b", "limit": limit})
        room = urllib.parse.quote(self.room_id)
        reply = self.call("GET", f"/_matrix/client/v3/rooms/{room}/messages?{query}", token)
        return list(reversed(reply["chunk"]))

    def say(self, token: str, body: Dict[str, Any], event_type: str = "m.room.message") -> str:
        """Send one event to the room as ``token``'s user; its event id."""
        room = urllib.parse.quote(self.room_id)
        txn = f"t{time.monotonic_ns()}"
        return self.call("PUT", f"/_matrix/client/v3/rooms/{room}/send/{event_type}/{txn}", token, body)["event_id"]


def _call(url: str, method: str, path: str, token: Optional[str], body: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url + path, data=data, method=method)
    request.add_header("Content-Type", "application/json")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            result: Dict[str, Any] = json.loads(reply.read() or b"{}")
            return result
    except urllib.error.HTTPError as error:
        raise RuntimeError(f"{method} {path}: HTTP {error.code}: {error.read().decode(errors='replace')}") from None


def _config(folder: Path) -> Dict[str, Any]:
    config: Dict[str, Any] = yaml.safe_load((folder / "homeserver.yaml").read_text())
    return config


def _write_config(folder: Path, port: int) -> None:
    """Generate Synapse's own config (keys and secrets included), then make it local, quiet and fast."""
    subprocess.run(
        [
            sys.executable,
            "-m",
            "synapse.app.homeserver",
            "--server-name",
            SERVER_NAME,
            "--config-path",
            str(folder / "homeserver.yaml"),
            "--data-directory",
            str(folder),
            "--generate-config",
            "--report-stats=no",
        ],
        check=True,
        capture_output=True,
        cwd=folder,
    )
    config = _config(folder)
    config["listeners"] = [
        {
            "port": port,
            "bind_addresses": ["127.0.0.1"],
            "type": "http",
            "tls": False,
            "x_forwarded": False,
            "resources": [{"names": ["client"], "compress": False}],  # no federation resource
        }
    ]
    config.update(
        {
            "database": {"name": "sqlite3", "args": {"database": str(folder / "homeserver.db")}},
            "enable_registration": False,
            "federation_domain_whitelist": [],  # federates with no one
            "trusted_key_servers": [],  # never asks matrix.org for keys
            "suppress_key_server_warning": True,
            "report_stats": False,
            "presence": {"enabled": False},
            "url_preview_enabled": False,
            "enable_metrics": False,
            **{limit: UNLIMITED for limit in RATE_LIMITS},
        }
    )
    (folder / "homeserver.yaml").write_text(yaml.safe_dump(config))


def _wait_ready(process: "subprocess.Popen[bytes]", url: str, server: Homeserver) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"Synapse exited with {process.returncode} at start; its log:\n{server.log_tail()}")
        try:
            _call(url, "GET", "/_matrix/client/versions", None, None)
            return
        except (OSError, RuntimeError):
            time.sleep(0.1)
    raise RuntimeError(f"Synapse did not answer on {url} in {START_TIMEOUT:.0f} s; its log:\n{server.log_tail()}")


def _stop(process: "subprocess.Popen[bytes]") -> None:
    """Stop the server's whole process group: TERM, then KILL what has not exited in 10 s."""
    for sig, wait in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            break
        try:
            process.wait(wait)
            break
        except subprocess.TimeoutExpired:
            continue


@contextmanager
def synapse_server(users: Sequence[str] = ("hermes", "alice")) -> Iterator[Homeserver]:
    """A running Synapse with ``users`` registered and a room made by the first that all have joined.

    Args:
        users: local names; the first creates the room and invites the rest, who join it.
    """
    folder = Path(tempfile.mkdtemp(prefix="norfab-hermes-synapse-"))
    try:
        port = free_port()
        _write_config(folder, port)
        url = f"http://127.0.0.1:{port}"
        server = Homeserver(url=url, room_id="", folder=folder)
        log = open(folder / "stdout.log", "wb")
        process = subprocess.Popen(
            [sys.executable, "-m", "synapse.app.homeserver", "--config-path", str(folder / "homeserver.yaml")],
            cwd=folder,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: stopped whole
        )
        try:
            _wait_ready(process, url, server)
            for name in users:
                server.register(name)
            owner, *guests = [server.users[name] for name in users]
            room = server.call(
                "POST",
                "/_matrix/client/v3/createRoom",
                owner.access_token,
                {"preset": "private_chat", "name": "hermes tests", "invite": [g.user_id for g in guests]},
            )
            server.room_id = room["room_id"]
            for guest in guests:
                server.call("POST", f"/_matrix/client/v3/join/{urllib.parse.quote(server.room_id)}", guest.access_token)
            yield server
        finally:
            _stop(process)
            log.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
