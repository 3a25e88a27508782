"""What a model may never make a NorFab task do: forbidden targets, guarded arguments, values and commands."""

import pytest

from norfab_hermes.safety import commands, guards


@pytest.mark.parametrize(
    "service, task, reason",
    [
        ("hermes", "invoke", "service 'hermes' cannot be a tool: agents do not call agents"),
        ("workflow", "run", "service 'workflow' cannot be a tool: a workflow runs any task"),
        ("fastapi", "bearer_token_store", "service 'fastapi' cannot be a tool"),
        ("nornir", "run_shell_cmd", "task 'run_shell_cmd' cannot be a tool: it runs shell commands on the worker host"),
        ("netbox", "get_inventory", "task 'get_inventory' cannot be a tool: it returns inventories with credentials"),
        ("nornir", "task", "nornir.task cannot be a tool: its plugin argument names Python code"),
        ("nornir", "file_copy", "nornir.file_copy cannot be a tool: it uploads any NorFab file"),
        ("netbox", "design_deploy", "netbox.design_deploy cannot be a tool"),
    ],
)
def test_forbidden_targets_say_why(service, task, reason):
    """Services, tasks and single targets that run code or hand out secrets are refused with the reason."""
    assert guards.forbidden_target(service, task).startswith(reason)


@pytest.mark.parametrize("service, task", [("nornir", "cli"), ("netbox", "get_devices"), ("nornir", "test")])
def test_ordinary_targets_are_allowed(service, task):
    """A read task of a network service can be a tool."""
    assert guards.forbidden_target(service, task) is None


@pytest.mark.parametrize("name", ["run_ttp", "RUN-TTP", "Function_File", "job_data", "new-line-char", "tf", "fo"])
def test_guarded_arguments_are_recognised_in_any_spelling(name):
    """Guarded argument names are matched case-insensitively with '-' and '_' alike."""
    assert guards.guarded_argument(name)


@pytest.mark.parametrize("name", ["commands", "FB", "hosts", "timeout", "ttp"])
def test_ordinary_arguments_are_not_guarded(name):
    """Host filters, commands and timeouts are the model's to set."""
    assert guards.guarded_argument(name) is None


def test_guarded_names_are_found_at_any_depth_with_the_reason():
    """refused_names walks dicts and lists and names each guarded key with why it is refused."""
    found = guards.refused_names({"FB": "r1", "nested": [{"Run-TTP": "x"}], "opts": {"plugin_file": "/tmp/x.py"}})
    assert found == [
        "'Run-TTP' (a TTP template: its <macro> runs Python on the worker)",
        "'plugin_file' (a Python file run on the worker)",
    ]


def test_strings_in_gives_the_path_of_every_string():
    """strings_in yields every string of a JSON-like value with its dotted path."""
    value = {"commands": ["show clock", {"x": "y"}], "n": 1, "FB": "r1"}
    assert list(guards.strings_in(value)) == [("commands[0]", "show clock"), ("commands[1].x", "y"), ("FB", "r1")]
    assert list(guards.strings_in("bare")) == [("value", "bare")]


@pytest.mark.parametrize("text", ["show {{ norfab.name }}", "{% for x in y %}", "{# comment #}"])
def test_template_syntax_is_refused(text):
    """A value holding Jinja2 syntax is refused, naming the argument."""
    with pytest.raises(ValueError, match=r"^argument commands\[0\] contains template syntax"):
        guards.check_values({"commands": [text]})


@pytest.mark.parametrize("text", ["nf://inventory.yaml", "GIT://repo/file", "see nf://x"])
def test_norfab_file_names_are_refused_unless_allowed(text):
    """nf:// and git:// values are refused by default and pass when the tool allows files."""
    with pytest.raises(ValueError, match="^argument source names a NorFab file"):
        guards.check_values({"source": text})
    guards.check_values({"source": text}, allow_files=True)


@pytest.mark.parametrize("text", ["clock\nreload", "a\rb", "a\x0bb", "a\u2028b", "a\x85b", "show_br_reload"])
def test_every_line_break_is_refused_unless_allowed(text):
    """Every character that splits lines, and nornir's _br_ marker, is refused unless the tool allows lines."""
    with pytest.raises(ValueError, match="^argument what must be a single line"):
        guards.check_values({"what": text})
    guards.check_values({"what": text}, allow_multiline=True)


def test_template_syntax_is_refused_even_where_files_and_lines_are_allowed():
    """allow_files and allow_multiline never let template syntax through."""
    with pytest.raises(ValueError, match="template syntax"):
        guards.check_values({"config": "line 1\n{{ x }}"}, allow_files=True, allow_multiline=True)


def test_command_arguments_are_named_in_any_spelling():
    """Arguments that reach a device as commands are recognised with '-' and '_' alike, sorted."""
    assert commands.command_arguments(["FB", "Commands", "config", "cli", "timeout"]) == ["Commands", "cli", "config"]


READ_ONLY = commands.compile_commands(list(commands.READ_ONLY_COMMANDS))


@pytest.mark.parametrize(
    "command",
    [
        "show ip interface brief",
        "sh run | include hostname",
        "show running-config | section router bgp | count",
        "display interface brief",
        "ping 10.0.0.1 repeat 2",
        "traceroute 192.0.2.1",
        "SHOW  VERSION",
    ],
)
def test_read_only_commands_pass_the_default_allow_list(command):
    """show/display with output filters, ping and traceroute pass the default allow-list."""
    commands.check_commands({"commands": [command]}, READ_ONLY, commands.READ_ONLY_SUMMARY)


@pytest.mark.parametrize(
    "command",
    [
        "reload",
        "configure terminal",
        "show run | redirect flash:x",
        "show run | tee flash:x",
        "show clock; reload",
        "show clock && reload",
        "show $(reload)",
        "clear counters",
        "ping 10.0.0.1; reload",
    ],
)
def test_other_commands_are_refused_by_the_default_allow_list(command):
    """Changes, redirects and chained commands are refused, naming the argument and the command."""
    with pytest.raises(ValueError, match=r"^argument commands\[0\]: command '.*' is not allowed by this tool"):
        commands.check_commands({"commands": [command]}, READ_ONLY, commands.READ_ONLY_SUMMARY)


def test_every_line_of_a_command_value_is_checked():
    """A multi-line command value is checked line by line: one bad line refuses the whole call."""
    with pytest.raises(ValueError, match="command 'reload' is not allowed"):
        commands.check_commands({"config": "show clock\nreload"}, READ_ONLY, "read-only")


def test_a_tool_allow_list_matches_whole_commands_only():
    """A tool's own patterns must match the whole command, case-insensitively."""
    allowed = commands.compile_commands([r"clear counters \S+"])
    commands.check_commands({"commands": "CLEAR COUNTERS Gi0/1"}, allowed, "clear counters")
    with pytest.raises(ValueError, match="command 'clear counters Gi0/1 ; reload' is not allowed"):
        commands.check_commands({"commands": "clear counters Gi0/1 ; reload"}, allowed, "clear counters")


def test_a_bad_allow_list_pattern_is_named():
    """An allow_commands pattern that is not a regular expression is refused by name."""
    with pytest.raises(ValueError, match=r"^allow_commands pattern 'show \(' is not a valid regular expression"):
        commands.compile_commands(["show ("])


@pytest.mark.parametrize("value", ["Gi0/1 | include up", "x; reload", "a > b", "a < b", "a & b", "`id`", "$(id)"])
def test_spliced_values_cannot_chain_filter_or_redirect(value):
    """A value spliced into a command template may not hold | ; < > & ` or $(."""
    with pytest.raises(ValueError, match=r"^argument interface must not contain"):
        commands.check_spliced({"interface": value})


def test_plain_spliced_values_pass():
    """A plain interface name passes the splice check."""
    commands.check_spliced({"interface": "GigabitEthernet0/1", "vrf": "MGMT-1"})
