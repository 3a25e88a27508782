"""
The generated network: two cores, distribution routers dual-homed to both, sites on the distribution routers.

Every size has the same shape, so a score at one size compares with another:
the cores peer with each other (iBGP) and with one upstream each (eBGP); OSPF
runs on every core and distribution link and on each site's VLAN interface
(a trunk from its distribution router carries the site's VLAN); each
distribution router has a static route to each of its sites' customer
prefixes; each site's customer port has an inbound access list. Every device
has a spare port, shut by design. The records (sites and customers) are what
an operations team keeps outside the network. Pure: the same size gives the
same network.
"""

from typing import Any, Dict, List, Tuple

from ..models import Network, Node, Port

# size -> (distribution routers, sites): 2 cores + these
SIZES: Dict[str, Tuple[int, int]] = {"small": (2, 6), "medium": (4, 24), "large": (8, 70)}
UPSTREAM_AS = (64500, 64501)
LOCAL_AS = 65000


def _p2p(index: int, base: int = 0) -> Tuple[str, str]:
    """The two addresses of point-to-point /30 number ``index``."""
    host = index * 4
    prefix = f"10.{base}.{host // 256}.{host % 256}"
    octets = prefix.rsplit(".", 1)
    last = int(octets[1])
    return f"{octets[0]}.{last + 1}/30", f"{octets[0]}.{last + 2}/30"


def site_vlan(index: int) -> int:
    return 100 + index


def build(size: str) -> Network:
    """The network of ``size`` (small, medium or large)."""
    if size not in SIZES:
        raise ValueError(f"unknown size '{size}': one of {', '.join(SIZES)}")
    dists, sites = SIZES[size]
    cores = [Node(name=f"core{c}", role="core", loopback=f"10.255.0.{c}", ports=[]) for c in (1, 2)]
    a, b = _p2p(0)
    cores[0].ports.append(_link("GigabitEthernet0/0", "core2", "GigabitEthernet0/0", a))
    cores[1].ports.append(_link("GigabitEthernet0/0", "core1", "GigabitEthernet0/0", b))
    links = 1
    distribution: List[Node] = []
    for d in range(1, dists + 1):
        node = Node(name=f"dist{d}", role="distribution", loopback=f"10.255.1.{d}", ports=[])
        for c, core in enumerate(cores):
            near, far = _p2p(links)
            links += 1
            core_port = f"GigabitEthernet0/{d}"
            core.ports.append(_link(core_port, node.name, f"GigabitEthernet0/{c}", near))
            node.ports.append(_link(f"GigabitEthernet0/{c}", core.name, core_port, far))
        distribution.append(node)
    for c, core in enumerate(cores):
        near, far = _p2p(c, base=250)
        port = f"GigabitEthernet0/{dists + 1}"
        core.ports.append(Port(name=port, description=f"upstream ISP-{c + 1} transit", address=near))
        other = cores[1 - c].loopback
        core.bgp = [
            {"address": far.split("/")[0], "remote_as": UPSTREAM_AS[c], "port": port, "description": f"ISP-{c + 1}"},
            {"address": other, "remote_as": LOCAL_AS, "port": "Loopback0", "description": "iBGP other core"},
        ]
    site_nodes = []
    records: Dict[str, Dict[str, Any]] = {"sites": {}, "customers": {}}
    for s in range(1, sites + 1):
        dist = distribution[(s - 1) % dists]
        slot = (s - 1) // dists
        vlan = site_vlan(s)
        near, far = _p2p(s - 1, base=2)
        trunk = f"GigabitEthernet1/{slot}"
        name = f"site{s}"
        dist.ports.append(
            Port(
                name=trunk,
                description=f"trunk to {name} Gi0/0",
                peer=name,
                peer_port="GigabitEthernet0/0",
                vlans=[vlan],
            )
        )
        dist.ports.append(
            Port(
                name=f"Vlan{vlan}",
                description=f"{name} routing",
                address=near,
                peer=name,
                peer_port=f"Vlan{vlan}",
                ospf=True,
                area="1",
                physical=False,
            )
        )
        prefix = f"172.16.{s}.0/24"
        dist.statics.append({"prefix": prefix, "next_hop": far.split("/")[0]})
        acl = f"CUST-S{s}-IN"
        node = Node(
            name=name,
            role="site",
            loopback=f"10.255.2.{s}",
            ports=[
                Port(
                    name="GigabitEthernet0/0",
                    description=f"uplink to {dist.name} {trunk}",
                    peer=dist.name,
                    peer_port=trunk,
                    vlans=[vlan],
                ),
                Port(
                    name=f"Vlan{vlan}",
                    description=f"uplink routing to {dist.name}",
                    address=far,
                    peer=dist.name,
                    peer_port=f"Vlan{vlan}",
                    ospf=True,
                    area="1",
                    physical=False,
                ),
                Port(name="GigabitEthernet0/1", description=f"customer LAN {prefix}", address=f"172.16.{s}.1/24"),
            ],
            acls={
                acl: [
                    f"permit tcp 172.16.{s}.0 0.0.0.255 host 10.200.{s % 250}.10 eq 443",
                    f"permit udp 172.16.{s}.0 0.0.0.255 any eq 53",
                    f"permit icmp 172.16.{s}.0 0.0.0.255 any",
                ]
            },
        )
        site_nodes.append(node)
        records["sites"][name] = {
            "site": f"{name} (store {s})",
            "device": name,
            "uplink": f"{dist.name} {trunk}, VLAN {vlan}",
            "customer prefix": prefix,
            "access list": f"{acl} inbound on GigabitEthernet0/1",
            "status": "in service",
        }
        records["customers"][f"Customer S{s}"] = {
            "customer": f"Customer S{s}",
            "site": name,
            "attachment": f"{name} GigabitEthernet0/1",
            "application": f"10.200.{s % 250}.10 tcp/443",
        }
    nodes = cores + distribution + site_nodes
    for node in nodes:
        spare = f"GigabitEthernet{'2/0' if node.role != 'site' else '0/2'}"
        node.ports.append(Port(name=spare, description="spare", spare=True))
        node.ports.append(
            Port(name="Loopback0", description="router id", address=f"{node.loopback}/32", physical=False)
        )
    return Network(size=size, nodes=nodes, records=records)


def _link(name: str, peer: str, peer_port: str, address: str) -> Port:
    return Port(
        name=name, description=f"link to {peer} {peer_port}", address=address, peer=peer, peer_port=peer_port, ospf=True
    )
