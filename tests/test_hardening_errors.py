"""
Finding 7 and the cases every agent host must survive at its front door:
bad operator input to any task comes back as one line that names the field
and the fix, never a traceback; an unknown agent is named as such on every
task; an agent cannot be given another agent as a tool.
"""

import json
import subprocess
import sys
import textwrap

import pytest
from conftest import Lab, run

pytestmark = pytest.mark.hardening

WORKER = "hermes-worker-1"
AGENTS = {
    "alpha": {"instructions": "You are ALPHA."},
    # recursion outside bounded delegation: an agent as another agent's tool
    "recursive": {
        "instructions": "I call agents.",
        "toolsets": ["norfab"],
        "tools": {"ask": {"norfab": {"service": "hermes", "task": "invoke"}}},
    },
}


LAB = Lab(workers={WORKER: AGENTS})


def clean_failure(res, *expected):
    assert res["failed"], res
    [message] = res["errors"]
    assert "Traceback" not in message, message
    assert "\n" not in message, message
    assert "pydantic" not in message, message
    assert "errors.pydantic.dev" not in message, message
    for text in expected:
        assert text in message, message
    return message


@pytest.mark.parametrize(
    "task, kwargs, expected",
    [
        ("invoke", {"agent": "alpha"}, ["invoke: field 'instructions' is required"]),
        ("invoke", {"agent": "alpha", "instructions": "hi", "timeout": -5}, ["field 'timeout'", "greater than 0"]),
        (
            "invoke",
            {"agent": "alpha", "instructions": "hi", "timeout": 5, "run_timeout": 6},
            ["timeout is the old name of run_timeout: give run_timeout alone"],
        ),
        (
            "invoke",
            {"agent": "alpha", "instructions": "hi", "bogus": 1},
            ["unknown argument 'bogus'", "allowed:", "instructions"],
        ),
        ("invoke", {"agent": "alpha", "instructions": "/restart"}, ["use the command task"]),
        ("get_sessions", {"agent": "alpha", "limit": "many"}, ["field 'limit'"]),
        ("get_session", {"agent": "alpha"}, ["field 'session_id' is required"]),
        ("get_session", {"agent": "alpha", "session_id": "nope"}, ["session 'nope' not found for agent 'alpha'"]),
        ("command", {"agent": "alpha", "command": "/restart"}, ["is not a supported command", "/usage"]),
        ("interrupt", {"agent": "alpha", "run_id": "nope"}, ["run 'nope' is not running"]),
        ("get_status", {"verbose": True}, ["unknown argument 'verbose'"]),
        ("get_agents", {"agent": "alpha"}, ["unknown argument 'agent'"]),
    ],
)
def test_bad_input_gets_one_line_naming_the_field(nf, task, kwargs, expected):
    clean_failure(run(nf.client, task, **kwargs), *expected)


def test_finding_10_an_unknown_task_is_named_in_one_line(nf):
    clean_failure(run(nf.client, "invok", agent="alpha"), "task 'invok' is not a task of service 'hermes'", "invoke")


@pytest.mark.parametrize(
    "task, kwargs, code",
    [
        ("invok", {"agent": "alpha"}, "unknown_task"),
        ("invoke", {"agent": "alpha", "bogus": 1}, "invalid_request"),
        ("invoke", {"agent": "nobody", "instructions": "hi"}, "agent_unavailable"),
        ("get_session", {"agent": "alpha", "session_id": "nope"}, "unknown_session"),
        ("get_run", {"agent": "alpha", "run_id": "nope"}, "unknown_run"),
        ("approve", {"approval_id": "nope"}, "unknown_approval"),
        ("schedule", {"agent": "alpha", "action": "pause", "schedule_id": "nope"}, "unknown_schedule"),
    ],
)
def test_a_failed_result_carries_a_machine_readable_code(nf, task, kwargs, code):
    from norfab_hermes.errors import error_code

    res = run(nf.client, task, **kwargs)
    assert res["failed"], res
    assert error_code(res) == code, res


@pytest.mark.parametrize(
    "task, kwargs",
    [
        ("invoke", {"instructions": "hi"}),
        ("get_agent", {}),
        ("get_sessions", {}),
        ("get_session", {"session_id": "x"}),
        ("command", {"command": "/usage"}),
        ("interrupt", {"run_id": "x"}),
    ],
)
def test_an_unknown_agent_is_named_on_every_task(nf, task, kwargs):
    clean_failure(
        run(nf.client, task, agent="nosuch", **kwargs),
        f"agent 'nosuch' not found on worker '{WORKER}'",
        "known agents: alpha",
    )


def test_an_agent_cannot_be_another_agents_tool(nf):
    agents = {a["name"]: a for a in run(nf.client, "get_agents")["result"]}
    assert agents["recursive"]["available"] is False
    assert "service 'hermes' cannot be a tool" in agents["recursive"]["error"]
    clean_failure(run(nf.client, "invoke", agent="recursive", instructions="hi"), "service 'hermes' cannot be a tool")


def test_a_bug_in_a_task_is_an_internal_error_without_traceback():
    # in a fresh interpreter: a task registered here would leak into the NorFab workers this process forks
    code = textwrap.dedent(
        """
        from norfab_hermes.worker.tasks.base import HermesTask

        class Worker:
            name = "hermes-x"

            @HermesTask(fastapi=False, mcp=False)
            def broken(self) -> None:
                raise KeyError("our own bug")

        from norfab.core.worker import NORFAB_WORKER_TASKS

        result = NORFAB_WORKER_TASKS["broken"]["function"](Worker(), job=None)  # as NorFab calls a task
        import json
        print(json.dumps([result.failed, result.errors]))
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    expected = "internal error in hermes worker 'hermes-x' running broken (KeyError); the worker log has the details"
    assert json.loads(done.stdout) == [True, [expected]]
    assert "Traceback" in done.stderr  # logged for the operator, not sent to the caller
