"""
The benchmark's scripted models: a generic investigator (the baseline) and the wrong models.

They plug into the scripted model server where a scenario file would
(``next_step``), and decide every reply from the tool results of the turn,
never from the ground truth. The investigator has no playbook per fault: it
sweeps every device's log, interfaces and error counters, follows up what it
saw (polls rising counters again, reads optics, BGP, OSPF interfaces, trunks,
access lists, static routes against the site records), then names the
fault its rules find, or says the network is healthy. Each reply is one
round of tool calls, all the round needs at once. Its score is the floor a
real model must beat.

The wrong models: ``always-healthy`` never finds a fault; ``first-device``
names the first device by name; ``every-device`` names every device
at once, which must earn no localization credit.
"""

import json
import re
from typing import Any, Dict, List, Optional, Set, Tuple

from ..evidence import _decode

ALL = "*"
RECORDS = "lab_records.site"
LOG, INTERFACES, ERRORS = "show logging", "show interfaces description", "show interfaces counters errors"
MAX_ROUNDS = 3  # the sweep and two rounds of follow-ups: a failed call is asked again once, never in a loop


def observations(results: List[dict]) -> Tuple[Dict[Tuple[str, str], List[str]], List[str]]:
    """Device outputs by (device, command), every poll in order; and the records' texts (or why there is none)."""
    seen: Dict[Tuple[str, str], List[str]] = {}
    records: List[str] = []
    for result in results:
        payload = _decode(result.get("content") or "")
        if not isinstance(payload, dict):
            continue
        for answer in (payload.get("workers") or {}).values():
            body = (answer or {}).get("result")
            records += [str(error) for error in (answer or {}).get("errors") or [] if payload.get("task") == RECORDS]
            if isinstance(body, str):
                records.append(body)
            elif isinstance(body, dict):
                for device, commands in body.items():
                    for command, output in (commands or {}).items() if isinstance(commands, dict) else []:
                        seen.setdefault((device, command), []).append(str(output))
    return seen, records


def _call(tool: str, **arguments: Any) -> Dict[str, str]:
    return {"name": tool, "arguments": json.dumps(arguments)}


def _peer(description: str) -> Optional[str]:
    """The device a port's description names at its other end."""
    match = re.search(r"(?:link to|trunk to|uplink to|uplink routing to) (\S+)", description) or re.match(
        r"(\S+) routing$", description
    )
    return match.group(1) if match else None


def _ports(text: str) -> Dict[str, Tuple[str, str, str]]:
    """``show interfaces description``: port -> (status, protocol, description)."""
    ports = {}
    for line in text.splitlines()[1:]:
        match = re.match(r"(\S+)\s+(admin down|up|down)\s+(up|down)\s+(.*)$", line)
        if match:
            ports[match.group(1)] = (match.group(2), match.group(3), match.group(4).strip())
    return ports


def _line(text: str, pattern: str) -> Optional[str]:
    return next((line.strip() for line in text.splitlines() if re.search(pattern, line)), None)


class Findings:
    """What the investigator knows from the turn's tool results."""

    def __init__(self, results: List[dict]) -> None:
        self.seen, self.records = observations(results)
        self.devices = sorted({device for device, command in self.seen if command == INTERFACES})

    def out(self, device: str, command: str, poll: int = -1) -> str:
        polls = self.seen.get((device, command)) or [""]
        return polls[poll] if -len(polls) <= poll < len(polls) else ""

    def polls(self, device: str, command: str) -> int:
        return len(self.seen.get((device, command)) or [])

    def logs(self, pattern: str) -> List[Tuple[str, re.Match, str]]:
        found = []
        for device in self.devices:
            for line in self.out(device, LOG).splitlines():
                match = re.search(pattern, line)
                if match:
                    found.append((device, match, line.strip()))
        return found

    def ports(self, device: str) -> Dict[str, Tuple[str, str, str]]:
        return _ports(self.out(device, INTERFACES))

    def errors(self, device: str, poll: int) -> Dict[str, int]:
        counts = {}
        for line in self.out(device, ERRORS, poll).splitlines()[1:]:
            parts = line.split()
            if len(parts) == 5 and parts[2].isdigit():
                counts[parts[0]] = int(parts[2])
        return counts

    def record(self, name: str) -> str:
        return next((text for text in self.records if re.search(rf"^device\s+{re.escape(name)}$", text, re.M)), "")

    def asked(self, name: str) -> bool:
        """Whether the site's record was read, or the records said why not."""
        return bool(self.record(name)) or any(f"'{name}'" in text for text in self.records)

    def ospf_ends(self) -> List[Tuple[str, str]]:
        """Ports whose adjacency the log says went down (or hangs), on ports still up."""
        ends = []
        for device, match, _ in self.logs(r"%OSPF-5-ADJCHG: .* on (\S+) from FULL to (DOWN|EXSTART)"):
            status = self.ports(device).get(match.group(1), ("up", "up", ""))
            if status[:2] == ("up", "up") and (device, match.group(1)) not in ends:
                ends.append((device, match.group(1)))
        return ends

    def svis_down(self) -> List[Tuple[str, str]]:
        return [
            (device, port)
            for device in self.devices
            for port, (status, protocol, _) in self.ports(device).items()
            if port.startswith("Vlan") and status == "up" and protocol == "down"
        ]

    def changed(self) -> List[str]:
        return sorted({device for device, _, _ in self.logs(r"%SYS-5-CONFIG_I")})


def follow_ups(f: Findings) -> List[Dict[str, str]]:
    """The calls the sweeps (and earlier follow-ups) ask for that have not been made.

    A device-wide command goes to every device that needs it in one call (``FL``); a port's, one call each.
    """
    calls: List[Dict[str, str]] = []
    sweeps: Dict[Tuple[str, str], Set[str]] = {}

    def sweep(tool: str, command: str, device: str) -> None:
        if f.polls(device, command) < 1:
            sweeps.setdefault((tool, command), set()).add(device)

    def port(tool: str, command: str, device: str, interface: str) -> None:
        if f.polls(device, command.format(interface)) < 1:
            calls.append(_call(tool, FB=device, interface=interface))

    # a second poll tells a rising counter from an old one
    for device in f.devices:
        if any(f.errors(device, 0).values()) and f.polls(device, ERRORS) < 2:
            sweeps.setdefault(("error_counters", ERRORS), set()).add(device)
    for device, match, _ in f.logs(r"Rx power low alarm.* on (\S+)$"):
        port("optics", "show interfaces {} transceiver", device, match.group(1))
    for device, _, _ in f.logs(r"%BGP-5-ADJCHANGE: neighbor \S+ Down"):
        sweep("bgp_summary", "show ip bgp summary", device)
        sweep("ip_interfaces", "show ip interface brief", device)
    for device, interface in f.ospf_ends():
        port("ospf_interface", "show ip ospf interface {}", device, interface)
        port("interface_detail", "show interfaces {}", device, interface)
        sweep("ospf_interfaces", "show ip ospf interface brief", device)
    for device, _ in f.svis_down():
        sweep("trunks", "show interfaces trunk", device)
    for device, _, _ in f.logs(r"%SEC-6-IPACCESSLOGP: list \S+ denied"):
        sweep("access_lists", "show ip access-lists", device)
        if not f.asked(device):
            calls.append(_call("site_record", name=device))
    for device in f.changed():  # what changed: a static route is wrong only against the records
        sweep("static_routes", "show ip route static", device)
        if re.search(r"^S\s", f.out(device, "show ip route static"), re.M):
            sweep("ospf_neighbors", "show ip ospf neighbor", device)
            for name, (_, _, description) in f.ports(device).items():
                site = _peer(description)
                if name.startswith("GigabitEthernet") and site and site.startswith("site") and not f.asked(site):
                    calls.append(_call("site_record", name=site))
    calls += [_call(tool, FL=sorted(devices)) for (tool, _), devices in sorted(sweeps.items())]
    unique = {c["name"] + c["arguments"]: c for c in calls}
    return list(unique.values())


def _evidence(device: str, command: str, line: Optional[str]) -> List[Dict[str, str]]:
    return [{"device": device, "command": command, "line": line}] if line else []


def _verdict(kind: str, device: str, interface: Optional[str], affected: List[str], evidence: List[dict]) -> dict:
    return {
        "fault_found": True,
        "device": device,
        "interface": interface,
        "kind": kind,
        "affected_devices": sorted(set(affected)),
        "evidence": evidence,
    }


HEALTHY: Dict[str, Any] = {
    "fault_found": False,
    "device": None,
    "interface": None,
    "kind": None,
    "affected_devices": [],
    "evidence": [],
}


def diagnose(f: Findings) -> dict:
    """The verdict the findings support; healthy when no rule finds a fault."""
    for rule in (_admin_down, _optic, _crc, _bgp, _vlan, _ospf, _acl, _static):
        verdict = rule(f)
        if verdict:
            return verdict
    return HEALTHY


def _admin_down(f: Findings) -> Optional[dict]:
    for device, match, line in f.logs(r"Interface (\S+), changed state to administratively down"):
        port = match.group(1)
        status, _, description = f.ports(device).get(port, ("", "", ""))
        if status == "admin down" and description != "spare":
            shown = _line(f.out(device, INTERFACES), rf"^{re.escape(port)}\s")
            affected = [device] + [p for p in [_peer(description)] if p]
            return _verdict(
                "interface_admin_down",
                device,
                port,
                affected,
                _evidence(device, LOG, line) + _evidence(device, INTERFACES, shown),
            )
    return None


def _optic(f: Findings) -> Optional[dict]:
    for device, match, line in f.logs(r"Rx power low alarm.* on (\S+)$"):
        command = f"show interfaces {match.group(1)} transceiver"
        reading = _line(f.out(device, command), r"Rx power .*low alarm")
        if reading:
            return _verdict(
                "optic_low_light",
                device,
                match.group(1),
                [device],
                _evidence(device, LOG, line) + _evidence(device, command, reading),
            )
    return None


def _crc(f: Findings) -> Optional[dict]:
    for device in f.devices:
        if f.polls(device, ERRORS) < 2:
            continue
        first, last = f.errors(device, 0), f.errors(device, -1)
        for port, count in last.items():
            if count > first.get(port, 0):
                shown = _line(f.out(device, ERRORS), rf"^{re.escape(port)}\s")
                return _verdict("crc_errors", device, port, [device], _evidence(device, ERRORS, shown))
    return None


def _bgp(f: Findings) -> Optional[dict]:
    for device, _, line in f.logs(r"%BGP-5-ADJCHANGE: neighbor \S+ Down"):
        summary = f.out(device, "show ip bgp summary")
        down = re.search(r"^(\d+\.\d+\.\d+\.\d+)\s.*\s(Idle|Active|Connect|OpenSent|OpenConfirm)\s*$", summary, re.M)
        if not down:
            continue
        peer = [int(x) for x in down.group(1).split(".")]
        port = None
        for entry in f.out(device, "show ip interface brief").splitlines():
            parts = entry.split()
            if len(parts) > 1 and re.match(r"\d+\.\d+\.\d+\.\d+$", parts[1]):
                mine = [int(x) for x in parts[1].split(".")]
                if mine[:3] == peer[:3] and mine[3] // 4 == peer[3] // 4:  # the same /30
                    port = parts[0]
        return _verdict(
            "bgp_peer_down",
            device,
            port,
            [device],
            _evidence(device, LOG, line) + _evidence(device, "show ip bgp summary", down.group(0)),
        )
    return None


def _vlan(f: Findings) -> Optional[dict]:
    for device, svi in f.svis_down():
        vlan = svi[len("Vlan") :]
        site = _peer(f.ports(device).get(svi, ("", "", ""))[2])
        trunks = f.out(device, "show interfaces trunk")
        for port, (_, _, description) in f.ports(device).items():
            allowed = re.search(rf"^{re.escape(port)}\s+([\d,]+)$", trunks, re.M)
            if allowed and _peer(description) == site and vlan not in allowed.group(1).split(","):
                return _verdict(
                    "vlan_missing_on_trunk",
                    device,
                    port,
                    [device] + ([site] if site else []),
                    _evidence(device, "show interfaces trunk", allowed.group(0)),
                )
    return None


def _ospf(f: Findings) -> Optional[dict]:
    """A lost adjacency between two ports that are up: the end whose area, hello or MTU is the odd one."""
    ends = f.ospf_ends()
    for device, port in ends:
        peer = _peer(f.ports(device).get(port, ("", "", ""))[2])
        other = next(((d, p) for d, p in ends if d == peer), None)
        if not other:
            continue
        odd = _odd_end(f, (device, port), other)
        if odd:
            (where, interface), command, line = odd
            return _verdict("ospf_mismatch", where, interface, [device, other[0]], _evidence(where, command, line))
    return None


def _odd_end(f: Findings, a: Tuple[str, str], b: Tuple[str, str]) -> Optional[Tuple[Tuple[str, str], str, str]]:
    def hello(end: Tuple[str, str]) -> str:
        return _line(f.out(end[0], f"show ip ospf interface {end[1]}"), r"Hello \d+") or ""

    def mtu(end: Tuple[str, str]) -> str:
        return _line(f.out(end[0], f"show interfaces {end[1]}"), r"MTU \d+") or ""

    def area(end: Tuple[str, str]) -> str:
        return _line(f.out(end[0], f"show ip ospf interface {end[1]}"), r"Area \S+") or ""

    def area_id(end: Tuple[str, str]) -> str:
        found = re.search(r"Area (\S+),", area(end))
        if found is None:  # IOS prints a comma after the area; without one there is no id to count
            raise ValueError(f"no OSPF area id in {area(end)!r}")
        return found.group(1)

    areas = [
        line.split()[2]
        for end in (a, b)
        for line in f.out(end[0], "show ip ospf interface brief").splitlines()[1:]
        if len(line.split()) > 2
    ]
    for value, usual, command in (
        (hello, "Hello 10,", "show ip ospf interface {}"),
        (mtu, "MTU 1500 ", "show interfaces {}"),
    ):
        if (usual in value(a)) != (usual in value(b)):
            end = b if usual in value(a) else a
            return end, command.format(end[1]), value(end)
    if area(a) != area(b):
        counts = {end: areas.count(area_id(end)) for end in (a, b) if area(end)}
        if len(counts) == 2:
            end = min(counts, key=lambda e: counts[e])
            return end, f"show ip ospf interface {end[1]}", area(end)
    return None


def _acl(f: Findings) -> Optional[dict]:
    for device, match, line in f.logs(r"%SEC-6-IPACCESSLOGP: list (\S+) denied"):
        acl = match.group(1)
        entry = _line(f.out(device, "show ip access-lists"), r"^\s*\d+ deny .*\((\d+) matches\)")
        applied = re.search(rf"{re.escape(acl)} inbound on (\S+)", f.record(device))
        if entry:
            return _verdict(
                "acl_drop",
                device,
                applied.group(1) if applied else None,
                [device],
                _evidence(device, LOG, line) + _evidence(device, "show ip access-lists", entry),
            )
    return None


def _static(f: Findings) -> Optional[dict]:
    """A static route to a site's customer prefix whose next hop is not that site's OSPF neighbour."""
    for device in f.changed():
        routes = f.out(device, "show ip route static")
        neighbours = f.out(device, "show ip ospf neighbor")
        for route in re.finditer(r"^S\s+(\S+) (?:\[1/0\] via (\S+)|is directly connected, Null0)$", routes, re.M):
            prefix, hop = route.group(1), route.group(2) or "Null0"
            site = next((s for s in f.records if re.search(rf"customer prefix\s+{re.escape(prefix)}$", s, re.M)), "")
            name = re.search(r"^device\s+(\S+)$", site, re.M)
            vlan = re.search(r"VLAN (\d+)$", site, re.M)
            if not (name and vlan):
                continue
            expected = re.search(rf"(\d+\.\d+\.\d+\.\d+)\s+Vlan{vlan.group(1)}$", neighbours, re.M)
            if expected and expected.group(1) != hop:
                return _verdict(
                    "wrong_static_route",
                    device,
                    None,
                    [device, name.group(1)],
                    _evidence(device, "show ip route static", route.group(0)),
                )
    return None


def _answer(verdict: dict) -> Dict[str, str]:
    return {"content": json.dumps(verdict)}


def _rounds(results: List[dict]) -> int:
    return len({r["round"] for r in results})


class Investigator:
    """The generic baseline: sweeps, follow-ups, rules; a reply per round (``next_step`` of a scenario)."""

    def next_step(
        self, user_text: str, results: List[dict], tools: Set[str], message: str = "", system: str = ""
    ) -> Optional[dict]:
        if not results:
            return {"tool_calls": [_call("health", FB=ALL)]}  # one job: every device's three sweeps
        findings = Findings(results)
        calls = [c for c in follow_ups(findings) if c["name"] in tools]
        if calls and _rounds(results) < MAX_ROUNDS:
            return {"tool_calls": calls}
        return _answer(diagnose(findings))


class AlwaysHealthy:
    """Answers at once that nothing is wrong."""

    def next_step(
        self, user_text: str, results: List[dict], tools: Set[str], message: str = "", system: str = ""
    ) -> Optional[dict]:
        return _answer(HEALTHY)


class FirstDevice:
    """A fault on the first device (by name) and its first port, whatever the network shows."""

    def next_step(
        self, user_text: str, results: List[dict], tools: Set[str], message: str = "", system: str = ""
    ) -> Optional[dict]:
        if not results:
            return {"tool_calls": [_call("interfaces", FB=ALL)]}
        seen, _ = observations(results)
        device, command = min(seen)  # the first by name: the same device whatever the network shows
        port = next(iter(_ports(seen[(device, command)][-1])), None)
        return _answer(_verdict("interface_admin_down", device, port, [device], []))


class EveryDevice:
    """Names every device at once: the answer a scorer must not reward."""

    def next_step(
        self, user_text: str, results: List[dict], tools: Set[str], message: str = "", system: str = ""
    ) -> Optional[dict]:
        if not results:
            return {"tool_calls": [_call("interfaces", FB=ALL)]}
        devices = sorted({device for device, _ in observations(results)[0]})
        return _answer(_verdict("interface_admin_down", ", ".join(devices), None, devices, []))


MODELS = {
    "baseline": Investigator,
    "always-healthy": AlwaysHealthy,
    "first-device": FirstDevice,
    "every-device": EveryDevice,
}
