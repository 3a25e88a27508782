"""
A FakeNOS switch for the change tests (a Python device model: its state changes).

Three ports an operator shuts and unshuts: Gi0/1 (cabled, up), Gi0/2 (shut,
no cable: it stays down when unshut) and Gi0/3 (cabled, shut; slow to take
a change). ``show lab log`` lists every configuration step the switch took,
numbered, so a test reads what was changed, in which order, on the device
itself.
"""

import threading
import time

NAME = "lab_switch"
DEVICE_NAME = "Switch"
INITIAL_PROMPT = "{base_prompt}#"
EXEC = "{base_prompt}#"
CONFIG = "{base_prompt}(config)#"
CONFIG_IF = "{base_prompt}(config-if)#"
PORTS = ("GigabitEthernet0/1", "GigabitEthernet0/2", "GigabitEthernet0/3")
SLOW_PORT = "GigabitEthernet0/3"
SLOW_SECONDS = 5


class Switch:
    def __init__(self, configuration_file=None):
        self.lock = threading.Lock()
        self.shut = {"GigabitEthernet0/1": False, "GigabitEthernet0/2": True, "GigabitEthernet0/3": True}
        self.cable = {"GigabitEthernet0/1": True, "GigabitEthernet0/2": False, "GigabitEthernet0/3": True}
        self.port = None
        self.log = []

    def _note(self, text):
        self.log.append(f"{len(self.log) + 1} {text}")

    def configure(self, base_prompt, current_prompt, command):
        with self.lock:
            self._note("configure")
        return {"output": "Enter configuration commands, one per line.  End with CNTL/Z.", "new_prompt": CONFIG}

    def interface(self, base_prompt, current_prompt, command):
        with self.lock:
            self.port = command.split()[-1]
        return {"output": "", "new_prompt": CONFIG_IF}

    def shutdown(self, base_prompt, current_prompt, command):
        with self.lock:
            port = self.port
        if port == SLOW_PORT:
            time.sleep(SLOW_SECONDS)
        with self.lock:
            self.shut[port] = not command.startswith("no ")
            self._note(f"{command} {port}")
        return ""

    def end(self, base_prompt, current_prompt, command):
        with self.lock:
            self._note("end")
        return {"output": "", "new_prompt": EXEC}

    def show_interface(self, base_prompt, current_prompt, command):
        port = command.split()[-1]
        with self.lock:
            shut, cable = self.shut[port], self.cable[port]
        state = "administratively down" if shut else ("up" if cable else "down")
        return f"{port} is {state}, line protocol is {'up' if state == 'up' else 'down'}"

    def show_log(self, base_prompt, current_prompt, command):
        with self.lock:
            return "\n".join(self.log) or "(no changes)"


def _command(output, prompt):
    return {"output": output, "help": "lab switch", "prompt": prompt}


commands = {
    "terminal length 0": _command("", EXEC),
    "terminal width 511": _command("", EXEC),
    "show clock": _command("*09:14:07.614 UTC Mon Nov 30 2026", EXEC),
    "show lab log": _command(Switch.show_log, EXEC),
    "configure terminal": _command(Switch.configure, EXEC),
    "end": _command(Switch.end, [CONFIG, CONFIG_IF]),
    "shutdown": _command(Switch.shutdown, CONFIG_IF),
    "no shutdown": _command(Switch.shutdown, CONFIG_IF),
    **{f"interface {port}": _command(Switch.interface, [CONFIG, CONFIG_IF]) for port in PORTS},
    **{f"show interfaces {port}": _command(Switch.show_interface, EXEC) for port in PORTS},
}
