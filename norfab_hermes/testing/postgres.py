"""
A throwaway PostgreSQL server for tests and benchmarks: ``initdb`` in a
temporary directory, ``postgres`` on 127.0.0.1 and a free port, stopped and
removed on the way out. Never a system service. ``stoppable_server`` yields
its ``Server``, whose ``stop`` and ``start`` make the database unreachable
and back for the tests of a fleet's outage.

``initdb`` and ``postgres`` refuse to run as root: as root (CI) they run as
the unprivileged ``postgres`` user (``runuser``), the directory chowned to
it; as any other user they run as that user.
"""

import os
import shutil
import subprocess
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, List, Optional

from .embedded import free_port

BIN_DIRS = ("/usr/lib/postgresql/15/bin", "/usr/lib/postgresql/16/bin", "/usr/lib/postgresql/17/bin")
SERVICE_USER = "postgres"  # the OS user the server runs as when the tests run as root
DATABASE = "hermes"
ROLE = "hermes"


def server_binaries() -> Optional[Path]:
    """The folder of ``initdb`` and ``pg_ctl``: NORFAB_HERMES_PG_BIN, a Debian folder, or the PATH."""
    wanted = os.environ.get("NORFAB_HERMES_PG_BIN")
    candidates = [wanted] if wanted else [*BIN_DIRS, *(os.environ.get("PATH", "").split(os.pathsep))]
    for folder in candidates:
        if folder and (Path(folder) / "initdb").is_file() and (Path(folder) / "pg_ctl").is_file():
            return Path(folder)
    return None


def _as_server_user() -> List[str]:
    return ["runuser", "-u", SERVICE_USER, "--"] if os.geteuid() == 0 else []


class Server:
    """A running throwaway server: its DSN, and ``stop``/``start`` for tests of an unreachable database."""

    def __init__(self, binaries: Path, data: Path, options: str, log: Path, prefix: List[str], dsn: str) -> None:
        self.binaries, self.data, self.options, self.log, self.prefix, self.dsn = (
            binaries,
            data,
            options,
            log,
            prefix,
            dsn,
        )

    def _ctl(self, *args: str) -> None:
        command = [*self.prefix, str(self.binaries / "pg_ctl"), "-D", str(self.data), *args]
        subprocess.run(command, check=True, capture_output=True, cwd=self.data.parent)

    def start(self) -> None:
        self._ctl("-o", self.options, "-l", str(self.log), "-w", "start")

    def stop(self, mode: str = "fast") -> None:
        """Stop the server: ``fast`` ends every session (what clients see of a server going down)."""
        self._ctl("-m", mode, "-w", "stop")


@contextmanager
def postgres_server(durable: bool = False) -> Iterator[str]:
    """A running server with database ``hermes`` owned by role ``hermes``; yields its DSN.

    Args:
        durable: keep fsync on (benchmarks measure what an operator's server does);
            tests turn it off, they never survive a power cut.
    """
    with stoppable_server(durable) as server:
        yield server.dsn


@contextmanager
def stoppable_server(durable: bool = False) -> Iterator[Server]:
    """``postgres_server``, yielding the ``Server`` (its DSN, stop and start)."""
    binaries = server_binaries()
    if binaries is None:
        raise RuntimeError(
            "PostgreSQL server binaries (initdb, pg_ctl) not found: install postgresql (Debian: postgresql-15) "
            "or set NORFAB_HERMES_PG_BIN to the folder that holds them"
        )
    folder = Path(tempfile.mkdtemp(prefix="norfab-hermes-pg-", dir="/tmp"))  # /tmp: the server user can reach it
    data, port, prefix = folder / "data", free_port(), _as_server_user()
    if prefix:
        shutil.chown(folder, SERVICE_USER, SERVICE_USER)
    try:
        subprocess.run(
            [*prefix, str(binaries / "initdb"), "-D", str(data), "-U", ROLE, "--auth=trust", "-E", "UTF8", "-N"],
            check=True,
            capture_output=True,
            cwd=folder,
        )
        options = f"-c listen_addresses=127.0.0.1 -p {port} -k {folder} -c max_connections=200"
        if not durable:
            options += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        dsn = f"host=127.0.0.1 port={port} user={ROLE}"
        server = Server(binaries, data, options, folder / "server.log", prefix, f"{dsn} dbname={DATABASE}")
        server.start()
        try:
            import psycopg  # the worker's optional driver: only who starts a server needs it

            with psycopg.connect(f"{dsn} dbname=postgres", autocommit=True) as admin:
                admin.execute(f"CREATE DATABASE {DATABASE} OWNER {ROLE}")
            yield server
        finally:
            subprocess.run(
                [*prefix, str(binaries / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"],
                capture_output=True,
                cwd=folder,
            )  # not checked: a test may have stopped it
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def new_database(dsn: str, name: str) -> str:
    """A new empty database ``name`` on the server of ``dsn``; its DSN (a test's record of its own)."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.execute(f'CREATE DATABASE "{name}" OWNER {ROLE}')
    return dsn.replace(f"dbname={DATABASE}", f"dbname={name}")
