"""
The fault catalogue, and the scenarios a seed draws from it.

Each kind places one fault at a random place of the network (a random
device and interface where that kind can happen) and names the devices it
shows on. ``plan`` draws a run's scenarios from one seed: at least one in
five is healthy (nothing injected), the other kinds are spread evenly, and
each scenario keeps a seed of its own, so ``scenario(network, kind, seed)``
gives it back alone. Every scenario, healthy or not, has background noise:
configuration log lines on some devices and old, steady error counters on
some links, as a real network has. Pure: the same seeds give the same
scenarios.
"""

import math
import random
from typing import Callable, Dict, List, Tuple

from ..models import BenchScenario, Fault, Network, Node, Port

HEALTHY = "healthy"
MAX_SEED = 2**31


def _links(network: Network, roles: Tuple[str, ...] = ("core", "distribution", "site")) -> List[Tuple[Node, Port]]:
    """Ports with a routing neighbour (OSPF), on devices of ``roles``."""
    return [(n, p) for n in network.nodes if n.role in roles for p in n.ports if p.ospf and p.peer]


def _physical(network: Network) -> List[Tuple[Node, Port]]:
    """Physical ports that carry a link (not spare, not logical)."""
    return [(n, p) for n in network.nodes for p in n.ports if p.physical and p.peer and not p.spare]


def _both(node: Node, port: Port) -> List[str]:
    return sorted({node.name, port.peer or node.name})


def admin_down(network: Network, rng: random.Random) -> Fault:
    node, port = rng.choice(_physical(network))
    return Fault(kind="interface_admin_down", device=node.name, interface=port.name, affected=_both(node, port))


def optic_low_light(network: Network, rng: random.Random) -> Fault:
    node, port = rng.choice(_physical(network))
    rx = round(rng.uniform(-32.0, -24.0), 1)
    return Fault(kind="optic_low_light", device=node.name, interface=port.name, affected=[node.name], detail={"rx": rx})


def crc_errors(network: Network, rng: random.Random) -> Fault:
    node, port = rng.choice(_physical(network))
    rate = rng.randint(40, 400)  # CRC errors per second, growing between polls
    return Fault(kind="crc_errors", device=node.name, interface=port.name, affected=[node.name], detail={"rate": rate})


def bgp_peer_down(network: Network, rng: random.Random) -> Fault:
    node = rng.choice([n for n in network.nodes if n.role == "core"])
    peer = next(p for p in node.bgp if p["port"] != "Loopback0")  # the upstream: iBGP rides OSPF
    return Fault(
        kind="bgp_peer_down",
        device=node.name,
        interface=peer["port"],
        affected=[node.name],
        detail={"peer": peer["address"], "state": rng.choice(["Idle", "Active"])},
    )


def ospf_mismatch(network: Network, rng: random.Random) -> Fault:
    node, port = rng.choice(_links(network))
    mismatch = rng.choice(["area", "timer", "mtu"])
    value = {"area": "2" if port.area != "2" else "3", "timer": rng.choice([5, 30]), "mtu": rng.choice([1400, 9000])}
    return Fault(
        kind="ospf_mismatch",
        device=node.name,
        interface=port.name,
        affected=_both(node, port),
        detail={"mismatch": mismatch, "value": value[mismatch]},
    )


def acl_drop(network: Network, rng: random.Random) -> Fault:
    node = rng.choice([n for n in network.nodes if n.acls])
    acl = next(iter(node.acls))
    entry = next(e for e in node.acls[acl] if e.startswith("permit tcp"))
    return Fault(
        kind="acl_drop",
        device=node.name,
        interface="GigabitEthernet0/1",
        affected=[node.name],
        detail={"acl": acl, "entry": "deny" + entry[len("permit") :], "position": rng.randint(0, 1)},
    )


def wrong_static_route(network: Network, rng: random.Random) -> Fault:
    node = rng.choice([n for n in network.nodes if n.statics])
    route = rng.choice(node.statics)
    site = next(p.peer for p in node.ports if p.address and p.peer and route["next_hop"] in _hosts(node, p))
    others = [r["next_hop"] for r in node.statics if r is not route]
    wrong = rng.choice(others + ["Null0"]) if others else "Null0"
    return Fault(
        kind="wrong_static_route",
        device=node.name,
        affected=sorted({node.name, str(site)}),
        detail={"prefix": route["prefix"], "next_hop": wrong},
    )


def _hosts(node: Node, port: Port) -> str:
    """The peer address of a /30 port: the other host of the subnet."""
    address = str(port.address).split("/")[0]
    head, last = address.rsplit(".", 1)
    other = int(last) + 1 if int(last) % 4 == 1 else int(last) - 1
    return f"{head}.{other}"


def vlan_missing(network: Network, rng: random.Random) -> Fault:
    node, port = rng.choice([(n, p) for n in network.nodes if n.role == "distribution" for p in n.ports if p.vlans])
    return Fault(
        kind="vlan_missing_on_trunk",
        device=node.name,
        interface=port.name,
        affected=sorted({node.name, str(port.peer)}),
        detail={"vlan": port.vlans[0]},
    )


# kind -> (what it is, how it is placed)
CATALOGUE: Dict[str, Tuple[str, Callable[[Network, random.Random], Fault]]] = {
    "interface_admin_down": ("a link port shut by configuration", admin_down),
    "optic_low_light": ("an optic receiving light below its low alarm; the link flaps", optic_low_light),
    "crc_errors": ("CRC and input errors rising on a link", crc_errors),
    "bgp_peer_down": ("a core's upstream BGP session not established", bgp_peer_down),
    "ospf_mismatch": ("an OSPF adjacency lost to an area, hello timer or MTU mismatch on one end", ospf_mismatch),
    "acl_drop": ("a deny entry in a site's customer access list dropping the customer's traffic", acl_drop),
    "wrong_static_route": ("a distribution router's static route to a site pointing the wrong way", wrong_static_route),
    "vlan_missing_on_trunk": ("a site's VLAN removed from its trunk on the distribution router", vlan_missing),
}
KINDS = list(CATALOGUE)


def noise(network: Network, rng: random.Random) -> Dict[str, object]:
    """Benign findings: routine configuration saves on some devices, old steady CRC counts on some links."""
    names = [n.name for n in network.nodes]
    links = [(n.name, p.name) for n, p in _physical(network)]
    return {
        "config_logs": sorted(rng.sample(names, max(1, len(names) // 5))),
        "old_crc": sorted(
            [name, port, rng.randint(1, 40)] for name, port in rng.sample(links, max(1, len(links) // 10))
        ),
    }


def scenario(network: Network, kind: str, seed: int, index: int = 0) -> BenchScenario:
    """One scenario of ``kind`` (or healthy), placed by ``seed`` alone."""
    if kind != HEALTHY and kind not in CATALOGUE:
        raise ValueError(f"unknown fault kind '{kind}': one of {HEALTHY}, {', '.join(KINDS)}")
    rng = random.Random(seed)
    fault = Fault(kind=HEALTHY) if kind == HEALTHY else CATALOGUE[kind][1](network, rng)
    return BenchScenario(index=index, seed=seed, fault=fault, noise=noise(network, rng))


def plan(network: Network, count: int, seed: int, kinds: List[str] = KINDS) -> List[BenchScenario]:
    """``count`` scenarios from ``seed``: ceil(count / 5) healthy (at least one), the kinds spread evenly."""
    rng = random.Random(seed)
    healthy = max(1, math.ceil(count / 5))
    faulty = [kinds[i % len(kinds)] for i in range(count - healthy)]
    order = [HEALTHY] * healthy + faulty
    rng.shuffle(order)
    return [scenario(network, kind, rng.randrange(MAX_SEED), index) for index, kind in enumerate(order)]
