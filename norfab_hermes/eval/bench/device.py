"""
What a generated device prints, under a scenario: the outputs of its show commands.

``State`` works out the network's state from the network and the scenario
(which ports are down, which adjacencies and sessions are lost, counters
that grow with the seconds since the fault was injected); ``render`` prints
one device's answer to one command in the IOS style. The lab's FakeNOS
device model (``bench_device.py`` in the generated lab) calls ``render``
for every command of every device, reading the scenario from a file the
eval writes between scenarios: the devices change without restarting NorFab.
Pure: the same network, scenario and seconds give the same text.
"""

import hashlib
import time
from pathlib import Path
from typing import Dict, List, Optional, Set, Tuple

from ..models import BenchScenario, Network, Node, Port

Key = Tuple[str, str]  # (device, port)
LOW_ALARM, LOW_WARNING = -18.0, -14.0  # receive power thresholds, dBm
FAULT_TIME = "08:41:17"


def _stable(*parts: object) -> int:
    """A number fixed by its parts (not by Python's per-process hash seed)."""
    return int(hashlib.sha256(repr(parts).encode()).hexdigest()[:8], 16)


class State:
    """The network's state under ``scenario``, ``elapsed`` seconds after its fault was injected."""

    def __init__(self, network: Network, scenario: BenchScenario, elapsed: float = 0.0) -> None:
        self.network, self.scenario, self.fault = network, scenario, scenario.fault
        self.elapsed = max(0.0, elapsed)
        self.nodes = {n.name: n for n in network.nodes}
        self.status: Dict[Key, Tuple[str, str]] = {}
        for node in network.nodes:
            for port in node.ports:
                self.status[(node.name, port.name)] = ("admin down", "down") if port.spare else ("up", "up")
        self.lost: Set[Key] = set()  # OSPF ports whose adjacency is down
        self.stuck: Set[Key] = set()  # OSPF ports whose adjacency hangs in EXSTART (MTU)
        self.logs: Dict[str, List[str]] = {n.name: [] for n in network.nodes}
        self._apply()

    def is_(self, kind: str) -> bool:
        return self.fault.kind == kind

    def _peer(self, node: str, port: str) -> Tuple[Node, Port]:
        here = self.nodes[node].port(port)
        return self.nodes[str(here.peer)], self.nodes[str(here.peer)].port(str(here.peer_port))

    def _svis(self, node: Node, port: Port) -> List[Key]:
        """The VLAN interfaces a trunk carries, at this end."""
        return [(node.name, f"Vlan{vlan}") for vlan in port.vlans]

    def _log(self, device: str, line: str, at: str = FAULT_TIME) -> None:
        self.logs[device].append(f"Dec  1 {at}.{_stable(device, line) % 1000:03d}: {line}")

    def _adjacency_down(self, key: Key, reason: str) -> None:
        port = self.nodes[key[0]].port(key[1])
        if not (port.ospf and port.peer):
            return
        far = (str(port.peer), str(port.peer_port))
        for end, other in ((key, far), (far, key)):
            self.lost.add(end)
            neighbour = self.nodes[other[0]].loopback
            self._log(end[0], f"%OSPF-5-ADJCHG: Process 1, Nbr {neighbour} on {end[1]} from FULL to DOWN, {reason}")

    def _apply(self) -> None:
        fault, detail = self.fault, self.fault.detail
        for name in self.scenario.noise.get("config_logs", []):
            self._log(name, "%SYS-5-CONFIG_I: Configured from console by netops on vty0 (10.9.8.4)", at="06:02:44")
        if fault.kind == "healthy" or not fault.device:
            return
        device, port_name = fault.device, fault.interface or ""
        configured = "%SYS-5-CONFIG_I: Configured from console by netops on vty0 (10.9.8.4)"
        if self.is_("interface_admin_down"):
            far_node, far_port = self._peer(device, port_name)
            self.status[(device, port_name)] = ("admin down", "down")
            self.status[(far_node.name, far_port.name)] = ("down", "down")
            self._log(device, configured, at="08:41:09")
            self._log(device, f"%LINK-5-CHANGED: Interface {port_name}, changed state to administratively down")
            self._log(far_node.name, f"%LINK-3-UPDOWN: Interface {far_port.name}, changed state to down")
            here = self.nodes[device].port(port_name)
            for key in [(device, port_name)] + self._svis(self.nodes[device], here):
                self.status.setdefault(key, ("up", "up"))
                if key[1].startswith("Vlan"):
                    self.status[key] = ("up", "down")
                self._adjacency_down(key, "Interface down or detached")
            for key in self._svis(far_node, far_port):
                self.status[key] = ("up", "down")
        elif self.is_("optic_low_light"):
            self._log(
                device,
                f"%TRANSCEIVER-3-THRESHOLD_VIOLATION: Rx power low alarm; Operating value: {detail['rx']} dBm, "
                f"Threshold value: {LOW_ALARM} dBm on {port_name}",
            )
            for minute in (12, 27, 39):
                self._log(device, f"%LINK-3-UPDOWN: Interface {port_name}, changed state to down", at=f"08:{minute}:02")
                self._log(device, f"%LINK-3-UPDOWN: Interface {port_name}, changed state to up", at=f"08:{minute}:05")
        elif self.is_("bgp_peer_down"):
            self._log(device, f"%BGP-5-ADJCHANGE: neighbor {detail['peer']} Down BGP Notification received")
            self._log(device, f"%BGP-3-NOTIFICATION: received from neighbor {detail['peer']} 4/0 (hold time expired)")
        elif self.is_("ospf_mismatch"):
            self._log(device, configured, at="08:41:09")
            far_node, far_port = self._peer(device, port_name)
            if detail["mismatch"] == "mtu":
                self.stuck |= {(device, port_name), (far_node.name, far_port.name)}
                neighbour = far_node.loopback
                self._log(
                    far_node.name,
                    f"%OSPF-5-ADJCHG: Process 1, Nbr {self.nodes[device].loopback} on {far_port.name} "
                    "from FULL to EXSTART, Too many retransmissions",
                )
                self._log(device, f"%OSPF-5-ADJCHG: Process 1, Nbr {neighbour} on {port_name} from FULL to EXSTART")
            else:
                self._adjacency_down((device, port_name), "Dead timer expired")
        elif self.is_("acl_drop"):
            self._log(device, configured, at="08:41:09")
            self._log(
                device,
                f"%SEC-6-IPACCESSLOGP: list {detail['acl']} denied tcp 172.16.{device[4:]}.23(51122) -> "
                f"10.200.{int(device[4:]) % 250}.10(443), {self.matches(40)} packets",
            )
        elif self.is_("wrong_static_route"):
            self._log(device, configured, at="08:41:09")
        elif self.is_("vlan_missing_on_trunk"):
            self._log(device, configured, at="08:41:09")
            vlan = detail["vlan"]
            self.status[(device, f"Vlan{vlan}")] = ("up", "down")
            self._log(device, f"%LINEPROTO-5-UPDOWN: Line protocol on Interface Vlan{vlan}, changed state to down")
            self._adjacency_down((device, f"Vlan{vlan}"), "Interface down or detached")

    def matches(self, rate: int) -> int:
        """A counter that grows ``rate`` a second since the fault, continuously: two polls differ (counted
        in whole seconds, two polls within one second read the same count and a growing counter looked still)."""
        return int(rate * (60 + self.elapsed))

    def crc(self, device: str, port: str) -> int:
        if self.fault.kind == "crc_errors" and (self.fault.device, self.fault.interface) == (device, port):
            return self.matches(int(self.fault.detail["rate"]))
        return next((int(c) for d, p, c in self.scenario.noise.get("old_crc", []) if (d, p) == (device, port)), 0)

    def rx(self, device: str, port: str) -> float:
        if self.fault.kind == "optic_low_light" and (self.fault.device, self.fault.interface) == (device, port):
            return float(self.fault.detail["rx"])
        return round(-2.0 - (_stable(device, port) % 40) / 10, 1)

    def trunk_vlans(self, device: str, port: Port) -> List[int]:
        if self.fault.kind == "vlan_missing_on_trunk" and (self.fault.device, self.fault.interface) == (
            device,
            port.name,
        ):
            return [v for v in port.vlans if v != self.fault.detail["vlan"]]
        return port.vlans

    def ospf_setting(self, device: str, port: Port) -> Tuple[str, int, int]:
        """(area, hello seconds, MTU) of a port."""
        area, hello, mtu = port.area, 10, 1500
        if self.fault.kind == "ospf_mismatch" and (self.fault.device, self.fault.interface) == (device, port.name):
            value = self.fault.detail["value"]
            mismatch = self.fault.detail["mismatch"]
            area = str(value) if mismatch == "area" else area
            hello = int(value) if mismatch == "timer" else hello
            mtu = int(value) if mismatch == "mtu" else mtu
        return area, hello, mtu


def interface_commands(network: Network) -> List[str]:
    """Every command a device answers: the fixed ones, and the per-interface ones for every port name in use."""
    names = sorted({p.name for n in network.nodes for p in n.ports})
    per_port = [f"show interfaces {n}" for n in names]
    per_port += [f"show interfaces {n} transceiver" for n in names]
    per_port += [f"show ip ospf interface {n}" for n in names]
    return list(FIXED) + per_port


def render(state: State, device: str, command: str) -> str:
    """``device``'s output for ``command``."""
    node = state.nodes.get(device)
    if node is None:
        return f"% unknown device {device}"
    if command in FIXED:
        return FIXED[command](state, node)
    for prefix, suffix, show in PER_PORT:
        if command.startswith(prefix) and command.endswith(suffix):
            name = command[len(prefix) : len(command) - len(suffix)]
            port = next((p for p in node.ports if p.name == name), None)
            return show(state, node, port) if port else f"% Invalid input: no interface {name} on {device}"
    return "% Invalid input detected at '^' marker."


def _description(state: State, node: Node) -> str:
    lines = [f"{'Interface':<22} {'Status':<14} {'Protocol':<8} Description"]
    for port in node.ports:
        status, protocol = state.status.get((node.name, port.name), ("up", "up"))
        lines.append(f"{port.name:<22} {status:<14} {protocol:<8} {port.description}")
    return "\n".join(lines)


def _ip_brief(state: State, node: Node) -> str:
    lines = [f"{'Interface':<22} {'IP-Address':<15} OK? Method Status                Protocol"]
    for port in node.ports:
        status, protocol = state.status.get((node.name, port.name), ("up", "up"))
        shown = "administratively down" if status == "admin down" else status
        address = str(port.address).split("/")[0] if port.address else "unassigned"
        lines.append(f"{port.name:<22} {address:<15} YES NVRAM  {shown:<21} {protocol}")
    return "\n".join(lines)


def _errors(state: State, node: Node) -> str:
    lines = [f"{'Port':<22} {'Align-Err':>10} {'FCS-Err':>10} {'Xmit-Err':>10} {'Rcv-Err':>10}"]
    for port in node.ports:
        if port.physical:
            crc = state.crc(node.name, port.name)
            lines.append(f"{port.name:<22} {0:>10} {crc:>10} {0:>10} {crc:>10}")
    return "\n".join(lines)


def _transceivers(state: State, node: Node) -> str:
    lines = [
        f"Optical receive power low alarm {LOW_ALARM} dBm, low warning {LOW_WARNING} dBm",
        f"{'Port':<22} {'Temp (C)':>9} {'Tx (dBm)':>9} {'Rx (dBm)':>9}",
    ]
    for port in node.ports:
        if port.physical and not port.spare:
            lines.append(f"{port.name:<22} {31.5:>9} {-2.1:>9} {state.rx(node.name, port.name):>9}")
    return "\n".join(lines)


def _transceiver(state: State, node: Node, port: Port) -> str:
    if not port.physical or port.spare:
        return f"% No transceiver present on {port.name}"
    rx = state.rx(node.name, port.name)
    alarm = "  -- low alarm" if rx < LOW_ALARM else ("  - low warning" if rx < LOW_WARNING else "")
    return (
        f"{port.name}\n  Temperature 31.5 C\n  Tx power -2.1 dBm\n  Rx power {rx} dBm{alarm}\n"
        f"  Rx low alarm threshold {LOW_ALARM} dBm, low warning threshold {LOW_WARNING} dBm"
    )


def _interface(state: State, node: Node, port: Port) -> str:
    status, protocol = state.status.get((node.name, port.name), ("up", "up"))
    shown = "administratively down" if status == "admin down" else status
    crc = state.crc(node.name, port.name)
    flaps = (
        7
        if state.is_("optic_low_light") and state.fault.interface == port.name and state.fault.device == node.name
        else 1
    )
    _, _, mtu = state.ospf_setting(node.name, port)
    address = f"\n  Internet address is {port.address}" if port.address else ""
    return (
        f"{port.name} is {shown}, line protocol is {protocol}\n"
        f"  Description: {port.description}{address}\n"
        f"  MTU {mtu} bytes, BW 1000000 Kbit/sec, DLY 10 usec,\n"
        f"     {crc} input errors, {crc} CRC, 0 frame, 0 overrun, 0 ignored\n"
        f"     0 output errors, 0 interface resets\n"
        f"     {flaps} carrier transitions"
    )


def _ospf_ports(node: Node) -> List[Port]:
    return [p for p in node.ports if p.ospf]


def _neighbors(state: State, node: Node) -> str:
    lines = [f"{'Neighbor ID':<15} {'Pri':>3}   {'State':<15} {'Dead Time':<11} {'Address':<15} Interface"]
    for port in _ospf_ports(node):
        key = (node.name, port.name)
        if key in state.lost:
            continue
        far = state.nodes[str(port.peer)]
        address = str(far.port(str(port.peer_port)).address).split("/")[0]
        adjacency = "EXSTART/  -" if key in state.stuck else "FULL/  -"
        lines.append(
            f"{far.loopback:<15} {0:>3}   {adjacency:<15} {'00:00:3' + str(_stable(key) % 10):<11} {address:<15} {port.name}"
        )
    return "\n".join(lines)


def _ospf_brief(state: State, node: Node) -> str:
    lines = [f"{'Interface':<22} {'PID':>3} {'Area':>5} {'IP Address/Mask':<18} {'Cost':>4} {'State':<5} Nbrs F/C"]
    for port in _ospf_ports(node):
        key = (node.name, port.name)
        area, _, _ = state.ospf_setting(node.name, port)
        full = 0 if key in state.lost or key in state.stuck else 1
        link = "DOWN" if state.status.get(key, ("up", "up"))[1] == "down" else "P2P"
        lines.append(f"{port.name:<22} {1:>3} {area:>5} {str(port.address):<18} {1:>4} {link:<5} {full}/1")
    return "\n".join(lines)


def _ospf_interface(state: State, node: Node, port: Port) -> str:
    if not port.ospf:
        return f"%OSPF: OSPF not enabled on {port.name}"
    area, hello, _ = state.ospf_setting(node.name, port)
    key = (node.name, port.name)
    count = 0 if key in state.lost or key in state.stuck else 1
    return (
        f"{port.name} is up, line protocol is {state.status.get(key, ('up', 'up'))[1]}\n"
        f"  Internet Address {port.address}, Area {area}, Attached via Network Statement\n"
        f"  Process ID 1, Router ID {node.loopback}, Network Type POINT_TO_POINT, Cost: 1\n"
        f"  Timer intervals configured, Hello {hello}, Dead {hello * 4}, Wait {hello * 4}, Retransmit 5\n"
        f"  Neighbor Count is {count}, Adjacent neighbor count is {count}"
    )


def _bgp(state: State, node: Node) -> str:
    if not node.bgp:
        return "% BGP not active"
    lines = [
        f"BGP router identifier {node.loopback}, local AS number 65000",
        "",
        f"{'Neighbor':<15} V {'AS':>6} MsgRcvd MsgSent Up/Down  State/PfxRcd",
    ]
    for peer in node.bgp:
        down = (
            state.is_("bgp_peer_down")
            and state.fault.device == node.name
            and state.fault.detail["peer"] == peer["address"]
        )
        shown = str(state.fault.detail["state"]) if down else str(800 + _stable(node.name, peer["address"]) % 200)
        lines.append(
            f"{peer['address']:<15} 4 {peer['remote_as']:>6} {'  91234':>7} {'  90877':>7} {'00:42:17' if down else '3w2d':<8} {shown}"
        )
    return "\n".join(lines)


def _acls(state: State, node: Node) -> str:
    if not node.acls:
        return ""
    lines = []
    for name, entries in node.acls.items():
        shown = list(entries)
        fault = state.fault
        denied = -1
        if fault.kind == "acl_drop" and fault.device == node.name and fault.detail["acl"] == name:
            denied = int(fault.detail["position"])
            shown.insert(denied, str(fault.detail["entry"]))
        lines.append(f"Extended IP access list {name}")
        for index, entry in enumerate(shown):
            count = state.matches(40) if index == denied else 100 + _stable(node.name, entry) % 5000
            lines.append(f"    {(index + 1) * 10} {entry} ({count} matches)")
    return "\n".join(lines)


def _statics(state: State, node: Node) -> str:
    lines = ["Codes: S - static, * - candidate default", ""]
    fault = state.fault
    for route in node.statics:
        hop = route["next_hop"]
        if (
            fault.kind == "wrong_static_route"
            and fault.device == node.name
            and fault.detail["prefix"] == route["prefix"]
        ):
            hop = str(fault.detail["next_hop"])
        via = "is directly connected, Null0" if hop == "Null0" else f"[1/0] via {hop}"
        lines.append(f"S        {route['prefix']} {via}")
    return "\n".join(lines) if node.statics else "% no static routes"


def _trunks(state: State, node: Node) -> str:
    trunks = [p for p in node.ports if p.vlans]
    if not trunks:
        return ""
    lines = [f"{'Port':<22} Mode  Encapsulation  Status    Native vlan"]
    lines += [f"{p.name:<22} on    802.1q         trunking  1" for p in trunks]
    lines += ["", f"{'Port':<22} Vlans allowed on trunk"]
    for port in trunks:
        lines.append(f"{port.name:<22} 1,{','.join(str(v) for v in state.trunk_vlans(node.name, port))}")
    return "\n".join(lines)


def _logging(state: State, node: Node) -> str:
    head = [
        "Syslog logging: enabled (0 messages dropped, 0 flushes, 0 overruns)",
        "Log Buffer (8192 bytes):",
        f"Nov 30 22:10:0{_stable(node.name) % 10}.101: %SYS-5-RESTART: System restarted",
    ]
    return "\n".join(head + sorted(state.logs[node.name], key=lambda line: line.split(": ", 1)[0][7:]))


FIXED = {
    "terminal length 0": lambda state, node: "",
    "terminal width 511": lambda state, node: "",
    "show interfaces description": _description,
    "show interfaces counters errors": _errors,
    "show interfaces transceiver": _transceivers,
    "show ip ospf neighbor": _neighbors,
    "show ip ospf interface brief": _ospf_brief,
    "show ip interface brief": _ip_brief,
    "show ip bgp summary": _bgp,
    "show ip access-lists": _acls,
    "show ip route static": _statics,
    "show interfaces trunk": _trunks,
    "show logging": _logging,
}
# (prefix, suffix, printer) of the commands that name a port; longest suffix first
PER_PORT = [
    ("show interfaces ", " transceiver", _transceiver),
    ("show ip ospf interface ", "", _ospf_interface),
    ("show interfaces ", "", _interface),
]


def scenario_of(text: Optional[str]) -> Optional[BenchScenario]:
    """The scenario the eval wrote (its JSON text), or None before the first."""
    return BenchScenario.model_validate_json(text) if text else None


NETWORK_FILE, SCENARIO_FILE = "network.json", "scenario.json"


def device_model(folder: str) -> Dict[str, object]:
    """A FakeNOS Python device model (its module attributes) answering from ``folder``'s network and scenario.

    The generated lab's ``bench.py`` model file is this, for its state folder:
    every device shares the model, and ``base_prompt`` (the device name) says
    which one answers. The scenario file is read when it changes; its
    modification time is when the fault was injected.
    """
    path = Path(folder)
    network = Network.model_validate_json((path / NETWORK_FILE).read_text())
    seen: Dict[float, Optional[BenchScenario]] = {}  # the scenario file's modification time: what it said

    def current() -> Tuple[Optional[BenchScenario], float]:
        scenario_path = path / SCENARIO_FILE
        try:
            written = scenario_path.stat().st_mtime
        except FileNotFoundError:
            return None, 0.0
        if written not in seen:
            seen.clear()
            seen[written] = scenario_of(scenario_path.read_text())
        return seen[written], time.time() - written

    class BenchDevice:
        def __init__(self, configuration_file: Optional[str] = None) -> None:
            pass

        def show(self, base_prompt: str, current_prompt: str, command: str) -> str:
            scenario, elapsed = current()
            if scenario is None:
                return "% the lab has no scenario yet"
            return render(State(network, scenario, elapsed), base_prompt, command)

    prompt = "{base_prompt}#"
    return {
        "NAME": "bench_device",
        "INITIAL_PROMPT": prompt,
        "DEVICE_NAME": "BenchDevice",
        "BenchDevice": BenchDevice,
        "commands": {
            command: {"output": BenchDevice.show, "help": command, "prompt": prompt}
            for command in interface_commands(network)
        },
    }
