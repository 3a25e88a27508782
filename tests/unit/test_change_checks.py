"""The pure checks of the change envelope: windows, devices named exactly, ${name} references, check
expectations, text for an operator's screen, digests, workflow files, and a preview's secrets masked
(no NorFab)."""

from datetime import datetime, timezone

import pytest

from norfab_hermes.models import ToolDefinition
from norfab_hermes.safety import commands, windows
from norfab_hermes.safety.changes import change_devices, change_digest, clean_text, placeholders, substitute, unmet
from norfab_hermes.safety.workflows import check_workflow
from norfab_hermes.worker.tools.checks import ChangeCall, Checks
from norfab_hermes.worker.tools.specs import ToolSpec

UTC = windows.time_zone("UTC")
READ_ONLY = commands.compile_commands(list(commands.READ_ONLY_COMMANDS))
PORTS = commands.compile_commands(["show interfaces \\S+", "interface \\S+", "no shutdown"])


def at(text):
    return datetime.fromisoformat(text).replace(tzinfo=timezone.utc)


@pytest.mark.parametrize(
    "window, when, open_",
    [
        ("sat,sun 00:00-24:00", "2026-11-28T13:00", True),  # a Saturday
        ("sat,sun 00:00-24:00", "2026-11-30T13:00", False),  # a Monday
        ("mon-fri 22:00-04:00", "2026-11-30T23:30", True),  # Monday night
        ("mon-fri 22:00-04:00", "2026-12-01T03:59", True),  # Tuesday morning, Monday's window
        ("mon-fri 22:00-04:00", "2026-11-30T03:00", False),  # Monday morning: Sunday has no window
        ("daily 01:00-03:00", "2026-11-29T03:00", False),  # the end is outside
        ("fri-mon 10:00-11:00", "2026-11-29T10:30", True),  # a range across the week's end
    ],
)
def test_a_window_is_open_on_its_days_and_past_midnight_on_the_next(window, when, open_):
    assert windows.is_open(windows.parse_window(window), at(when)) is open_


def test_outside_every_window_the_refusal_names_the_next_one():
    shut = [windows.parse_window("sat 02:00-04:00"), windows.parse_window("wed 23:00-01:00")]
    refusal = windows.refusal(shut, UTC, at("2026-11-30T12:00"), "agent 'ops'")
    assert refusal.startswith(
        "agent 'ops' change windows (sat 02:00-04:00; wed 23:00-01:00, UTC) are closed now (Mon 12:00)"
    )
    assert refusal.endswith("the next window opens Wed 2026-12-02 23:00 UTC")
    assert windows.refusal(shut, UTC, at("2026-12-03T00:30"), "x") is None
    assert windows.refusal([], UTC, at("2026-12-03T00:30"), "x") is None


@pytest.mark.parametrize(
    "text, error",
    [
        ("weekends 01:00-02:00", "'weekends' is not a day"),
        ("sat 01:00-01:00", "starts when it ends"),
        ("sat 24:00-01:00", "'24:00' is not a time of day"),
        ("sat 1-2", "must be DAYS HH:MM-HH:MM"),
    ],
)
def test_a_bad_window_says_how_to_write_it(text, error):
    with pytest.raises(ValueError, match=error):
        windows.parse_window(text)


def test_a_change_names_its_devices_exactly():
    assert change_devices({"FB": "sw2, sw1", "FL": ["sw1", "core-1.lab"]}) == ["core-1.lab", "sw1", "sw2"]
    assert change_devices({"commands": ["x"]}) == []
    for pattern in ({"FB": "sw*"}, {"FL": ["sw[12]"]}, {"FB": "sw 1"}):
        with pytest.raises(ValueError, match="must be named exactly"):
            change_devices(pattern)
    with pytest.raises(ValueError, match="FC could pick devices the approval does not show"):
        change_devices({"FB": "sw1", "FC": "sw"})


def test_references_are_filled_in_and_a_whole_reference_keeps_its_type():
    value = {"FB": "${switch}", "FL": "${devices}", "config": ["interface ${port}", "description ${port} up"]}
    variables = {"switch": "sw1", "devices": ["a", "b"], "port": "Gi0/1"}
    assert placeholders(value) == {"switch", "devices", "port"}
    assert substitute(value, variables) == {
        "FB": "sw1",
        "FL": ["a", "b"],
        "config": ["interface Gi0/1", "description Gi0/1 up"],
    }
    assert substitute("^${port} is up$", {"port": "Gi0/1.10"}, escape=True) == "^Gi0/1\\.10 is up$"
    with pytest.raises(KeyError):
        substitute("${missing}", {})


def test_expectations_say_what_the_output_failed_to_show():
    text = "Gi0/2 is down, line protocol is down\nlast flap 00:01"
    assert unmet(text, ["${port} is up"], ["down"], ["^last flap"], {"port": "Gi0/2"}) == [
        "does not show 'Gi0/2 is up'",
        "still shows 'down'",
    ]
    assert unmet(text, [], [], ["^${port} is"], {"port": "Gi0/2"}) == []


def test_device_text_is_cleaned_and_bounded_for_an_operator():
    shown = clean_text("line\x1b[2Jone\r\n\u202eevil\x07", 100)
    assert shown == "line[2Jone\nevil"
    assert clean_text("x" * 50, 10) == "x" * 10 + "\n[... 40 more characters]"


def test_a_digest_covers_every_part_of_the_change():
    change = {"tool": "t", "kwargs": {"FB": "sw1", "config": ["a"]}, "devices": ["sw1"], "preview": {"sw1": "a"}}
    assert change_digest(change) == change_digest(dict(reversed(change.items())))
    for part, value in (("kwargs", {"FB": "sw1", "config": ["b"]}), ("preview", {"sw1": "b"}), ("devices", ["sw2"])):
        assert change_digest({**change, part: value}) != change_digest(change)


WORKFLOW = {
    "name": "bring-up",
    "check": {
        "service": "nornir",
        "task": "cli",
        "kwargs": {"FB": "${switch}", "commands": ["show interfaces ${port}"]},
    },
    "change": {
        "service": "nornir",
        "task": "cfg",
        "kwargs": {"FB": "${switch}", "config": ["interface ${port}", "no shutdown"]},
    },
}


def test_a_workflow_file_passes_every_guard_a_tool_call_passes():
    steps = check_workflow(WORKFLOW, {"switch", "port"}, PORTS, "ports")
    assert [(s.name, s.service, s.task) for s in steps] == [("check", "nornir", "cli"), ("change", "nornir", "cfg")]


@pytest.mark.parametrize(
    "step, error",
    [
        ({"service": "workflow", "task": "run"}, "service 'workflow' cannot be a tool"),
        ({"service": "nornir", "task": "task", "kwargs": {"plugin": "x"}}, "nornir.task cannot be a tool"),
        ({"service": "nornir", "task": "cli", "kwargs": {"run_ttp": "x"}}, "'run_ttp'"),
        ({"service": "nornir", "task": "cli", "kwargs": {"commands": ["show {{ x }}"]}}, "template syntax"),
        (
            {"service": "nornir", "task": "cli", "kwargs": {"commands": ["show run"], "FC": "sw"}},
            "FB or FL only, not FC",
        ),
        ({"service": "nornir", "task": "cli", "kwargs": {"commands": ["reload"]}}, "command 'reload' is not allowed"),
        ({"service": "nornir", "task": "cli", "kwargs": {"commands": ["show ${secret}"]}}, "${secret} not declared"),
        ({"service": "nornir", "task": "cli", "args": ["x"]}, "args not allowed"),
        ({"service": "nornir", "task": "${task}"}, "service, task and workers are fixed"),
    ],
)
def test_a_workflow_step_that_would_pass_a_guard_is_refused_naming_it(step, error):
    with pytest.raises(ValueError, match=error.replace("$", "\\$").replace("{", "\\{").replace("(", "\\(")):
        check_workflow({"name": "x", "bad": step}, {"switch"}, READ_ONLY, "read-only")


def test_a_workflow_without_steps_is_refused():
    with pytest.raises(ValueError, match="no steps"):
        check_workflow({"name": "x"}, set(), READ_ONLY, "read-only")


def test_the_lab_pins_its_reviewed_workflows_and_they_pass_their_tools_checks():
    import hashlib
    from pathlib import Path

    import yaml

    from norfab_hermes.models import parse_agent

    lab = Path(__file__).resolve().parents[2] / "examples" / "lab"
    pinned = 0
    for path in sorted((lab / "hermes" / "agents").glob("*.yaml")):
        definition = parse_agent(path.stem, yaml.safe_load(path.read_text()))
        for name, workflow in definition.workflows.items():
            text = (lab / workflow.file.removeprefix("nf://")).read_text()
            assert hashlib.sha256(text.encode()).hexdigest() == workflow.sha256, (
                f"{path.name} {name}: pin the reviewed file"
            )
            allowed = commands.compile_commands(workflow.allow_commands or list(commands.READ_ONLY_COMMANDS))
            check_workflow(yaml.safe_load(text), set(workflow.input_schema["properties"]), allowed, "its allow-list")
            pinned += 1
    assert pinned == 2


class PreviewRunner:
    """The tool runner as the checks use it: one reply for every job."""

    def __init__(self, reply):
        self.reply = reply

    def secrets(self):
        return ["s3cr3t-key"]

    def call_timeout(self, spec, run):
        return 10.0

    def dispatch(self, target, kwargs, timeout, run, interrupted, trace):
        trace.job_uuid = "dry-run-job"
        return self.reply


class QuietRun:
    stop_reason = None

    def event(self, *args, **kwargs):
        pass


def test_a_preview_masks_secrets_before_an_operator_or_a_record_sees_it():
    definition = {"approval": True, "norfab": {"service": "nornir", "task": "cfg"}, "preview": {"dry_run": True}}
    spec = ToolSpec("fixer", "set_user", ToolDefinition.model_validate(definition))
    dry_run = "username ops secret 0 hunter2\nsnmp-server location s3cr3t-key\ninterface Gi0/1"
    reply = {"nornir-worker-1": {"failed": False, "result": {"sw1": {"netmiko_send_config": dry_run}}}}
    call = ChangeCall(spec, {"FB": "sw1"}, QuietRun(), lambda: False)
    preview = Checks(PreviewRunner(reply), lambda agent, name: None).preview(call, {"FB": "sw1", "config": ["x"]})
    assert preview == {"sw1": "username ops secret 0 ***\nsnmp-server location ***\ninterface Gi0/1"}
