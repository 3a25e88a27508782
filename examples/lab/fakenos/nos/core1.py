"""
core1: the first core router. It carries dist1 alone (dist1's link to core2
is shut), reaches the DC-West fabric on GigabitEthernet0/3, and peers with
PARTNER-X on GigabitEthernet0/4. That peering is down: PARTNER-X sent more
routes than the maximum-prefix limit of 1000 at 07:55, as it did on Nov 2
(INC-0990). ``clear ip bgp 10.250.0.2`` brings the session back with 212
prefixes (the partner has withdrawn the leak).

A FakeNOS device model in Python (loaded by norfab_hermes.testing.fakenos); Core1 keeps
whether the session was cleared. ``lab reset`` puts it back to the start of
the story (the eval harness runs it before every run; no agent tool sends it).
"""

import threading

NAME = "lab_core1"
INITIAL_PROMPT = "{base_prompt}#"
DEVICE_NAME = "Core1"
PROMPT = "{base_prompt}#"

PEER = "10.250.0.2"
BGP_HEADER = """\
BGP router identifier 10.255.0.1, local AS number 65000
BGP table version is 48211, main routing table version 48211

Neighbor        V           AS MsgRcvd MsgSent   TblVer  InQ OutQ Up/Down  State/PfxRcd
10.0.31.2       4        65101   91234   90877    48211    0    0 3w2d           412"""
BGP_IBGP = "10.255.0.2      4        65000   88120   88131    48211    0    0 3w2d           398"
PEER_DOWN = "10.250.0.2      4        64900    1811    1790        0    0    0 01:18:18 Idle (PfxCt)"
PEER_UP = "10.250.0.2      4        64900    1816    1795    48211    0    0 00:00:09       212"
LOG = """\
Nov 28 11:20:03.771: %SYS-5-CONFIG_I: Configured from console by asmith on vty0 (10.9.8.4)
Nov 30 07:55:41.118: %BGP-4-MAXPFX: Number of prefixes received from 10.250.0.2 (afi 0) reaches 751, max 1000
Nov 30 07:55:49.602: %BGP-3-MAXPFXEXCEED: Number of prefixes received from 10.250.0.2 (afi 0): 1001 exceeds limit 1000
Nov 30 07:55:49.603: %BGP-5-ADJCHANGE: neighbor 10.250.0.2 Down BGP Notification sent
Nov 30 07:55:49.604: %BGP-3-NOTIFICATION: sent to neighbor 10.250.0.2 6/1 (cease - maximum number of prefixes reached) 0 bytes"""
RECOVERED = "Nov 30 09:14:31.207: %BGP-5-ADJCHANGE: neighbor 10.250.0.2 Up"


class Core1:
    """core1's state: whether the PARTNER-X session was cleared."""

    def __init__(self, configuration_file: str = None) -> None:
        self.cleared = False
        self.lock = threading.Lock()

    def bgp_summary(self, base_prompt: str, current_prompt: str, command: str) -> str:
        with self.lock:
            peer = PEER_UP if self.cleared else PEER_DOWN
        return "\n".join([BGP_HEADER, peer, BGP_IBGP])

    def show_logging(self, base_prompt: str, current_prompt: str, command: str) -> str:
        with self.lock:
            return LOG + ("\n" + RECOVERED if self.cleared else "")

    def clear_peer(self, base_prompt: str, current_prompt: str, command: str) -> str:
        with self.lock:
            self.cleared = True
        return ""

    def reset(self, base_prompt: str, current_prompt: str, command: str) -> str:
        with self.lock:
            self.cleared = False
        return ""


def _static(output: str, description: str) -> dict:
    return {"output": output, "help": description, "prompt": PROMPT}


commands = {
    "terminal length 0": _static("", "no paging"),
    "terminal width 511": _static("", "wide lines"),
    "lab reset": {"output": Core1.reset, "help": "lab only: back to the start of the story", "prompt": PROMPT},
    "show clock": _static("*09:14:07.614 UTC Mon Nov 30 2026", "system time"),
    "show ip bgp summary": {"output": Core1.bgp_summary, "help": "BGP peers", "prompt": PROMPT},
    "show logging": {"output": Core1.show_logging, "help": "device log", "prompt": PROMPT},
    f"clear ip bgp {PEER}": {"output": Core1.clear_peer, "help": "reset the PARTNER-X session", "prompt": PROMPT},
    "show ip interface brief": _static(
        """\
Interface              IP-Address      OK? Method Status                Protocol
GigabitEthernet0/0     10.0.12.1       YES NVRAM  up                    up
GigabitEthernet0/1     10.0.11.1       YES NVRAM  up                    up
GigabitEthernet0/3     10.0.31.1       YES NVRAM  up                    up
GigabitEthernet0/4     10.250.0.1      YES NVRAM  up                    up
Loopback0              10.255.0.1      YES NVRAM  up                    up""",
        "interface summary",
    ),
    "show interfaces description": _static(
        """\
Interface                      Status         Protocol Description
Gi0/0                          up             up       link to core2 Gi0/0
Gi0/1                          up             up       link to dist1 Gi0/1
Gi0/3                          up             up       DC-West fabric
Gi0/4                          up             up       PARTNER-X peering, cross-connect XC-PX-0042
Lo0                            up             up       router id""",
        "interface descriptions",
    ),
    "show interfaces GigabitEthernet0/0": _static(
        """\
GigabitEthernet0/0 is up, line protocol is up
  Hardware is iGbE, address is 5254.0011.0300 (bia 5254.0011.0300)
  Description: link to core2 Gi0/0
  Internet address is 10.0.12.1/30
  MTU 1500 bytes, BW 1000000 Kbit/sec, DLY 10 usec,
     reliability 255/255, txload 4/255, rxload 3/255
     0 input errors, 0 CRC, 0 frame, 0 overrun, 0 ignored
     0 interface resets
     1 carrier transitions""",
        "interface details",
    ),
    "show interfaces GigabitEthernet0/1": _static(
        """\
GigabitEthernet0/1 is up, line protocol is up
  Hardware is iGbE, address is 5254.0011.0301 (bia 5254.0011.0301)
  Description: link to dist1 Gi0/1
  Internet address is 10.0.11.1/30
  MTU 1500 bytes, BW 1000000 Kbit/sec, DLY 10 usec,
     reliability 255/255, txload 41/255, rxload 38/255
     0 input errors, 0 CRC, 0 frame, 0 overrun, 0 ignored
     0 interface resets
     1 carrier transitions""",
        "interface details",
    ),
    "show interfaces GigabitEthernet0/3": _static(
        """\
GigabitEthernet0/3 is up, line protocol is up
  Hardware is iGbE, address is 5254.0011.0303 (bia 5254.0011.0303)
  Description: DC-West fabric
  Internet address is 10.0.31.1/30
  MTU 1500 bytes, BW 1000000 Kbit/sec, DLY 10 usec,
     reliability 255/255, txload 52/255, rxload 47/255
     0 input errors, 0 CRC, 0 frame, 0 overrun, 0 ignored
     0 interface resets
     1 carrier transitions""",
        "interface details",
    ),
    "show interfaces GigabitEthernet0/4": _static(
        """\
GigabitEthernet0/4 is up, line protocol is up
  Hardware is iGbE, address is 5254.0011.0304 (bia 5254.0011.0304)
  Description: PARTNER-X peering, cross-connect XC-PX-0042
  Internet address is 10.250.0.1/30
  MTU 1500 bytes, BW 1000000 Kbit/sec, DLY 10 usec,
     reliability 255/255, txload 1/255, rxload 1/255
     0 input errors, 0 CRC, 0 frame, 0 overrun, 0 ignored
     0 interface resets
     1 carrier transitions""",
        "interface details",
    ),
    "show ip ospf neighbor": _static(
        """\
Neighbor ID     Pri   State           Dead Time   Address         Interface
10.255.0.2        0   FULL/  -        00:00:33    10.0.12.2       GigabitEthernet0/0
10.255.0.11       0   FULL/  -        00:00:38    10.0.11.2       GigabitEthernet0/1""",
        "OSPF neighbors",
    ),
    "show ip route 10.200.50.10": _static(
        """\
Routing entry for 10.200.0.0/16
  Known via "bgp 65000", distance 20, metric 0
  Last update from 10.0.31.2 3w2d ago
  Routing Descriptor Blocks:
  * 10.0.31.2, from 10.0.31.2, 3w2d ago
      Route metric is 0, traffic share count is 1""",
        "route to 10.200.50.10",
    ),
}
