"""
A network namespace joined to this host by a veth pair, so that a worker
process started inside it reaches the broker across a real interface, as
from another host. Needs Linux, iproute2 and CAP_NET_ADMIN (root); where
they are missing :class:`NamespaceUnavailable` says which. Addresses come
from the benchmarking range 198.18.0.0/15 (RFC 2544), never routed.
"""

import os
import random
import shutil
import subprocess
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Tuple


class NamespaceUnavailable(Exception):
    """A network namespace cannot be made here; the message says why."""


@dataclass(frozen=True)
class Namespace:
    name: str
    host_interface: str
    host_address: str  # this host's end of the veth pair: the broker listens here
    address: str  # the namespace's end

    @property
    def prefix(self) -> Tuple[str, ...]:
        """Run a command inside the namespace: ``(*ns.prefix, command, ...)``."""
        return ("ip", "netns", "exec", self.name)

    def bytes_received(self) -> int:
        """Bytes this host received from the namespace over the veth pair."""
        return int(Path(f"/sys/class/net/{self.host_interface}/statistics/rx_bytes").read_text())


def _ip(*arguments: str) -> None:
    subprocess.run(["ip", *arguments], check=True, capture_output=True, text=True, timeout=10)


@contextmanager
def veth_namespace(tag: str = "nfh") -> Iterator[Namespace]:
    """A namespace named ``TAG-PID`` with a /30 from 198.18.0.0/15 on a veth pair; removed on the way out."""
    if shutil.which("ip") is None:
        raise NamespaceUnavailable("iproute2's 'ip' command is not installed")
    if os.geteuid() != 0:
        raise NamespaceUnavailable("making a network namespace needs root (CAP_NET_ADMIN)")
    pid = os.getpid()
    subnet = random.Random(pid).randrange(0, 2**15 // 4) * 4  # a /30 inside 198.18.0.0/15
    third, fourth = 18 + subnet // 256 // 256, subnet // 256 % 256
    host, inside = f"198.{third}.{fourth}.{subnet % 256 + 1}", f"198.{third}.{fourth}.{subnet % 256 + 2}"
    name, veth = f"{tag}-{pid}", f"{tag}{pid % 100000}"
    try:
        _ip("netns", "add", name)
    except (subprocess.CalledProcessError, OSError) as error:
        raise NamespaceUnavailable(f"'ip netns add' failed: {getattr(error, 'stderr', '') or error}") from None
    try:
        _ip("link", "add", f"{veth}h", "type", "veth", "peer", "name", f"{veth}n")
        _ip("link", "set", f"{veth}n", "netns", name)
        _ip("addr", "add", f"{host}/30", "dev", f"{veth}h")
        _ip("link", "set", f"{veth}h", "up")
        _ip("netns", "exec", name, "ip", "addr", "add", f"{inside}/30", "dev", f"{veth}n")
        _ip("netns", "exec", name, "ip", "link", "set", f"{veth}n", "up")
        _ip("netns", "exec", name, "ip", "link", "set", "lo", "up")
    except subprocess.CalledProcessError as error:
        subprocess.run(["ip", "netns", "del", name], capture_output=True)
        raise NamespaceUnavailable(f"setting up the veth pair failed: {error.stderr.strip()}") from None
    try:
        yield Namespace(name, f"{veth}h", host, inside)
    finally:
        subprocess.run(["ip", "netns", "del", name], capture_output=True)  # takes the veth pair with it
        subprocess.run(["ip", "link", "del", f"{veth}h"], capture_output=True)
