"""
Which commands a model may send to a device through a tool.

A tool whose arguments reach a device as commands (``commands``, ``config``,
...) sends only what its ``allow_commands`` patterns match in whole, or,
without them, read-only forms (show/display with output filters, ping,
traceroute). Values spliced into a tool's fixed command templates may not
chain, filter or redirect them.

Pure data and checks: imported by ``models`` (tool definitions) and by the
worker's tools.
"""

import re
from typing import Any, Dict, List

from .guards import normal, strings_in

# Arguments whose values reach a device as commands or configuration lines
# (compared with '-' and '_' alike).
COMMAND_ARGUMENTS = {"commands", "command", "cmd", "cmds", "cli", "config", "configuration", "lines"}
# What a tool whose arguments reach a device as commands allows when its
# definition does not say (allow_commands): read-only forms, with output
# filters but never an output redirect (IOS `| redirect`, `| tee`, `| append`
# write files on the device).
FILTER = (
    r"(\s+\|\s*(include|exclude|begin|section|count|match|except|no-more|i|inc|e|ex|exc|b|beg|s|sec|c)(\s+[^|;]+)?)*"
)
READ_ONLY_COMMANDS = (
    rf"(sh|sho|show|dis|disp|display)(\s+[^|;<>&`$]+)?{FILTER}",
    r"ping\s+[\w.:/-]+(\s+[\w.:/-]+)*",
    r"traceroute\s+[\w.:/-]+(\s+[\w.:/-]+)*",
)
READ_ONLY_SUMMARY = (
    "read-only commands: show or display (output filters such as | include, never a redirect), ping, traceroute"
)
# job_data values are spliced into command templates: these chain, filter
# or redirect device commands
COMMAND_CHAINING = re.compile(r"[|;<>&`]|\$\(")


def command_arguments(names: Any) -> List[str]:
    """The names among ``names`` that reach a device as commands."""
    return sorted(name for name in names if normal(str(name)) in COMMAND_ARGUMENTS)


def compile_commands(patterns: List[str]) -> List["re.Pattern[str]"]:
    """Allow-list patterns, matched against a whole command, case-insensitively; ValueError names a bad one."""
    compiled = []
    for pattern in patterns:
        try:
            compiled.append(re.compile(pattern, re.I))
        except re.error as error:
            raise ValueError(f"allow_commands pattern {pattern!r} is not a valid regular expression: {error}") from None
    return compiled


def check_commands(arguments: Dict[str, Any], allowed: List["re.Pattern[str]"], described: str) -> None:
    """Raise ValueError for a command argument value no allow-list pattern matches in whole."""
    for name in command_arguments(arguments):
        for path, text in strings_in(arguments[name], name):
            for line in text.splitlines() or [""]:
                command = " ".join(line.split())
                if not any(pattern.fullmatch(command) for pattern in allowed):
                    raise ValueError(
                        f"argument {path}: command '{command}' is not allowed by this tool (it sends only {described}); "
                        "the call was not made"
                    )


def check_spliced(arguments: Dict[str, Any]) -> None:
    """Raise ValueError for a value that would chain, filter or redirect the command it is spliced into."""
    for path, text in strings_in(arguments):
        if COMMAND_CHAINING.search(text):
            raise ValueError(f"argument {path} must not contain | ; < > & ` or $( (they change the device command)")
