"""
core2: the second core router. Its uplink to DC-East runs over the carrier
circuit TLC-40917 (GigabitEthernet0/3), which dropped for ~40 minutes every
three days around 03:00, and degrades now: every poll of the interface is
five minutes of device time later, with more CRC errors, another flap and a
little less receive light. Its link to dist1 (GigabitEthernet0/2) is down:
dist1 shut its end on Nov 29.

A FakeNOS device model in Python (loaded by norfab_hermes.testing.fakenos): the
outputs that change are methods of Core2, which keeps the device's state.
``lab reset`` puts it back to the start of the story (the eval harness runs
it before every run; no agent tool sends it).
"""

import threading
from datetime import datetime, timedelta

NAME = "lab_core2"
INITIAL_PROMPT = "{base_prompt}#"
DEVICE_NAME = "Core2"

START = datetime(2026, 11, 30, 9, 14, 7, 902000)  # device time of the first poll
POLL = timedelta(minutes=5)  # device time between two polls of GigabitEthernet0/3
PROMPT = "{base_prompt}#"

UPLINK_HISTORY = """\
Nov 21 03:12:44.210: %LINK-3-UPDOWN: Interface GigabitEthernet0/3, changed state to down
Nov 21 03:53:02.771: %LINK-3-UPDOWN: Interface GigabitEthernet0/3, changed state to up
Nov 24 02:58:19.054: %LINK-3-UPDOWN: Interface GigabitEthernet0/3, changed state to down
Nov 24 03:41:37.902: %LINK-3-UPDOWN: Interface GigabitEthernet0/3, changed state to up
Nov 27 03:05:51.330: %LINK-3-UPDOWN: Interface GigabitEthernet0/3, changed state to down
Nov 27 03:47:08.116: %LINK-3-UPDOWN: Interface GigabitEthernet0/3, changed state to up
Nov 29 22:10:15.441: %OSPF-5-ADJCHG: Process 1, Nbr 10.255.0.11 on GigabitEthernet0/2 from FULL to DOWN, Neighbor Down: Interface down or detached
Nov 29 22:10:15.447: %LINK-3-UPDOWN: Interface GigabitEthernet0/2, changed state to down
Nov 30 03:09:27.608: %LINK-3-UPDOWN: Interface GigabitEthernet0/3, changed state to down
Nov 30 03:09:27.611: %OSPF-5-ADJCHG: Process 1, Nbr 10.255.9.2 on GigabitEthernet0/3 from FULL to DOWN, Neighbor Down: Interface down or detached
Nov 30 03:51:40.225: %LINK-3-UPDOWN: Interface GigabitEthernet0/3, changed state to up
Nov 30 03:51:48.930: %OSPF-5-ADJCHG: Process 1, Nbr 10.255.9.2 on GigabitEthernet0/3 from LOADING to FULL, Loading Done"""


def _clock(moment: datetime) -> str:
    return moment.strftime("*%H:%M:%S.") + f"{moment.microsecond // 1000:03d}" + moment.strftime(" UTC %a %b %d %Y")


def _log_time(moment: datetime) -> str:
    return moment.strftime("%b %d %H:%M:%S.") + f"{moment.microsecond // 1000:03d}"


class Core2:
    """core2's state: how many times GigabitEthernet0/3 was polled since the story started."""

    def __init__(self, configuration_file: str = None) -> None:
        self.polls = 0
        self.lock = threading.Lock()

    def now(self) -> datetime:
        return START + self.polls * POLL

    def show_clock(self, base_prompt: str, current_prompt: str, command: str) -> str:
        with self.lock:
            return _clock(self.now())

    def uplink(self, base_prompt: str, current_prompt: str, command: str) -> str:
        """``show interfaces GigabitEthernet0/3``: every poll moves the story on by POLL."""
        with self.lock:
            k = self.polls
            self.polls += 1
        crc = 18412 + 233 * k
        return f"""\
GigabitEthernet0/3 is up, line protocol is up
  Hardware is iGbE, address is 5254.0022.0303 (bia 5254.0022.0303)
  Description: DC-East via Telco North circuit TLC-40917
  Internet address is 10.0.32.1/30
  MTU 1500 bytes, BW 1000000 Kbit/sec, DLY 10 usec,
     reliability {249 - k}/255, txload 12/255, rxload 9/255
  Last input 00:00:00, output 00:00:00, output hang never
  Last clearing of "show interface" counters 10w1d
  5 minute input rate 35120000 bits/sec, 3410 packets/sec
     {crc + 96} input errors, {crc} CRC, 0 frame, 0 overrun, 0 ignored
     7 interface resets
     {46 + 2 * k} carrier transitions"""

    def optics(self, base_prompt: str, current_prompt: str, command: str) -> str:
        with self.lock:
            rx = -17.7 - 0.2 * self.polls
        flag = "--" if rx <= -20.0 else "-" if rx <= -18.0 else ""
        return f"""\
++ : high alarm, + : high warning, - : low warning, -- : low alarm.
                              Optical   Optical
           Temperature        Tx Power  Rx Power
Port       (Celsius)          (dBm)     (dBm)
---------  -----------        --------  --------
Gi0/3        34.1               -2.3     {rx:.1f} {flag}
Rx power thresholds: low warning -18.0 dBm, low alarm -20.0 dBm""".rstrip()

    def show_logging(self, base_prompt: str, current_prompt: str, command: str) -> str:
        """The history, then a short flap between every two polls so far."""
        with self.lock:
            polls = self.polls
        lines = [UPLINK_HISTORY]
        for n in range(1, polls):
            down = START + (n - 1) * POLL + timedelta(minutes=2, seconds=31, microseconds=114000)
            up = down + timedelta(seconds=2, microseconds=406000)
            lines.append(f"{_log_time(down)}: %LINK-3-UPDOWN: Interface GigabitEthernet0/3, changed state to down")
            lines.append(f"{_log_time(up)}: %LINK-3-UPDOWN: Interface GigabitEthernet0/3, changed state to up")
        return "\n".join(lines)

    def reset(self, base_prompt: str, current_prompt: str, command: str) -> str:
        with self.lock:
            self.polls = 0
        return ""


def _static(output: str, description: str) -> dict:
    return {"output": output, "help": description, "prompt": PROMPT}


commands = {
    "terminal length 0": _static("", "no paging"),
    "terminal width 511": _static("", "wide lines"),
    "lab reset": {"output": Core2.reset, "help": "lab only: back to the start of the story", "prompt": PROMPT},
    "show clock": {"output": Core2.show_clock, "help": "system time", "prompt": PROMPT},
    "show logging": {"output": Core2.show_logging, "help": "device log", "prompt": PROMPT},
    "show interfaces GigabitEthernet0/3": {"output": Core2.uplink, "help": "interface details", "prompt": PROMPT},
    "show interfaces GigabitEthernet0/3 transceiver": {"output": Core2.optics, "help": "optics", "prompt": PROMPT},
    "show ip interface brief": _static(
        """\
Interface              IP-Address      OK? Method Status                Protocol
GigabitEthernet0/0     10.0.12.2       YES NVRAM  up                    up
GigabitEthernet0/2     10.0.22.1       YES NVRAM  down                  down
GigabitEthernet0/3     10.0.32.1       YES NVRAM  up                    up
Loopback0              10.255.0.2      YES NVRAM  up                    up""",
        "interface summary",
    ),
    "show interfaces description": _static(
        """\
Interface                      Status         Protocol Description
Gi0/0                          up             up       link to core1 Gi0/0
Gi0/2                          down           down     link to dist1 Gi0/2
Gi0/3                          up             up       DC-East via Telco North circuit TLC-40917
Lo0                            up             up       router id""",
        "interface descriptions",
    ),
    "show interfaces GigabitEthernet0/0": _static(
        """\
GigabitEthernet0/0 is up, line protocol is up
  Hardware is iGbE, address is 5254.0022.0300 (bia 5254.0022.0300)
  Description: link to core1 Gi0/0
  Internet address is 10.0.12.2/30
  MTU 1500 bytes, BW 1000000 Kbit/sec, DLY 10 usec,
     reliability 255/255, txload 3/255, rxload 4/255
     0 input errors, 0 CRC, 0 frame, 0 overrun, 0 ignored
     0 interface resets
     1 carrier transitions""",
        "interface details",
    ),
    "show interfaces GigabitEthernet0/2": _static(
        """\
GigabitEthernet0/2 is down, line protocol is down
  Hardware is iGbE, address is 5254.0022.0302 (bia 5254.0022.0302)
  Description: link to dist1 Gi0/2
  Internet address is 10.0.22.1/30
  MTU 1500 bytes, BW 1000000 Kbit/sec, DLY 10 usec,
     reliability 255/255, txload 1/255, rxload 1/255
  Last input 11:03:52, output 11:03:52, output hang never
     0 input errors, 0 CRC, 0 frame, 0 overrun, 0 ignored
     0 interface resets
     3 carrier transitions""",
        "interface details",
    ),
    "show ip ospf neighbor": _static(
        """\
Neighbor ID     Pri   State           Dead Time   Address         Interface
10.255.0.1        0   FULL/  -        00:00:35    10.0.12.1       GigabitEthernet0/0
10.255.9.2        0   FULL/  -        00:00:31    10.0.32.2       GigabitEthernet0/3""",
        "OSPF neighbors",
    ),
    "show ip bgp summary": _static(
        """\
BGP router identifier 10.255.0.2, local AS number 65000
BGP table version is 39108, main routing table version 39108

Neighbor        V           AS MsgRcvd MsgSent   TblVer  InQ OutQ Up/Down  State/PfxRcd
10.0.32.2       4        65102    1977    1981    39108    0    0 05:22:27      398
10.255.0.1      4        65000   88131   88120    39108    0    0 3w2d          1066""",
        "BGP peers",
    ),
    "show ip route 10.200.50.10": _static(
        """\
Routing entry for 10.200.0.0/16
  Known via "bgp 65000", distance 200, metric 0
  Last update from 10.255.0.1 3w2d ago
  Routing Descriptor Blocks:
  * 10.255.0.1, from 10.255.0.1, 3w2d ago
      Route metric is 0, traffic share count is 1""",
        "route to 10.200.50.10",
    ),
}
