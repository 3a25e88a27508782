"""The lab demo, as `make demo` runs it: its findings quote the FakeNOS routers' output."""

import os
import re
import subprocess
import sys
from pathlib import Path

DEMO = Path(__file__).resolve().parents[1] / "examples" / "lab" / "demo.py"


def test_demo_investigates_the_lab_and_quotes_device_output():
    # the scripted model, whatever provider this machine is configured for
    env = {k: v for k, v in os.environ.items() if not k.startswith("NORFAB_HERMES_")}
    done = subprocess.run([sys.executable, str(DEMO)], capture_output=True, text=True, timeout=240, env=env)
    out = done.stdout
    assert done.returncode == 0, done.stderr[-3000:]
    # interfaces: evidence from r1's device model (examples/lab/fakenos/nos/r1.yaml)
    assert "GigabitEthernet0/2     192.0.2.1       YES NVRAM  down                  down" in out
    assert "1204 input errors, 1187 CRC, 0 frame, 0 overrun, 0 ignored" in out
    assert "operator: yes" in out
    assert "tool bounce_interface completed" in out
    assert "open a field ticket for customer ACME-7 access, circuit ACM-00731" in out
    # routing, asked by interfaces on the other worker process: r3's route via r2 and the MTU mismatch
    assert "GigabitEthernet0/1     10.13.0.2       YES NVRAM  up                    up" in out
    assert "routing@hermes-worker-2: tool route_to completed" in out
    assert re.search(r"tool ask_routing +completed .* -> routing@hermes-worker-2 run \w+ session \w+", out), out
    assert "* 10.23.0.1, from 10.0.0.1, 2d02h ago, via GigabitEthernet0/0" in out
    assert "r3 has 1400 bytes, r1 has 1500 bytes" in out
    assert out.count("completed | run ") == 2
    # the interface check as a schedule: fired on its own, reported, changed nothing
    assert "nf# hermes history interfaces schedule r1-interfaces" in out
    assert "ok | due " in out
    assert "tool bounce_interface  refused" in out
    assert "this run is not interactive" in out
    assert "Recommended: 1187 CRC and 14 carrier transitions point at the physical layer" in out.replace("**", "").replace("\n  ", " ")
