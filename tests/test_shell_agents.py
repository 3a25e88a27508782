"""The nf# hermes agent lifecycle commands, driven through NorFab's real nfcli root shell against two hermes workers."""

import io
import json
import os
import pty
import re
import sys
from contextlib import redirect_stdout
from pathlib import Path

import pytest
import test_shell
import yaml
from conftest import last_job, result_of, start_invoke
from rich.console import Console
from test_shell import LAB1, LAB2, nfcli

from norfab_hermes.nfcli.lifecycle import HermesDeleteCommand
from norfab_hermes.nfcli_shell import HermesShell

LAB, app = test_shell.LAB, test_shell.app  # as in test_shell: a NorFab with two hermes workers, nfcli's shell
SOURCE = "nf://hermes/agents/interface-check.yaml"
DEFINITION = {
    "instructions": "You check interfaces.",
    "description": "interface checks from a file",
    "hermes": {"model": {"default": "alpha-model"}},
}


def flat(output):
    return " ".join(output.split())


def row(worker, agent, *cells):
    """A table row: worker, agent, then the given cells, each in its own column."""
    return re.compile(r"\s+│\s+".join(re.escape(str(cell)) for cell in (worker, agent, *cells)) + r"(\s|$)")


def red(rendered):
    console = Console(file=io.StringIO(), force_terminal=True, width=200)
    console.print(rendered)
    return console.file.getvalue()


def manage_jobs(nf):
    return nf.client.job_db.fetch_jobs(service="hermes", task="manage_agent", last=1000)


@pytest.fixture(scope="module")
def files(nf):
    """The definition file, under the NorFab base directory the broker serves nf:// files from."""
    path = Path(nf.inventory_path).resolve().parent / "hermes" / "agents" / "interface-check.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(DEFINITION))
    return path


def create(app, name, worker=LAB2):
    out = nfcli(app, f"hermes create {name} from {SOURCE} workers {worker}")
    assert row(worker, name, "runtime", "running").search(out), out
    return out


def test_create_from_an_nf_file_then_invoke_it(nf, app, files):
    out = nfcli(app, f"hermes create ifcheck from {SOURCE} workers {LAB2}")
    sent = last_job(nf.client, "manage_agent")
    assert sent["workers_requested"] == [LAB2]
    assert sent["kwargs"] == {"agent": "ifcheck", "action": "create", "source": SOURCE}
    assert "created profile" in out
    assert "attached agent 'ifcheck' to the gateway; it takes runs" in flat(out)
    assert row(LAB2, "ifcheck", "runtime", "running").search(out), out
    assert f'try it: hermes invoke ifcheck "..." workers {LAB2}' in flat(out)

    out = nfcli(app, "hermes agents")
    assert row(LAB2, "ifcheck", "yes", "running", "runtime", "alpha-model").search(out), out
    assert row(LAB1, "routing", "yes", "running", "inventory").search(out), out
    assert "interface checks from a file" in out

    out = nfcli(app, 'hermes invoke ifcheck "Check Gi0/1 on r1"')  # one worker serves it: no workers needed
    assert last_job(nf.client, "invoke")["workers_requested"] == LAB2
    assert "ECHO: Check Gi0/1 on r1" in out
    assert f"worker {LAB2} | agent ifcheck" in out


def test_clone_with_another_model_answers_with_that_model(nf, app, files, model):
    create(app, "ifsource")
    out = nfcli(app, f"hermes clone ifsource-beta from ifsource workers {LAB2} model beta-model")
    sent = last_job(nf.client, "manage_agent")
    assert sent["workers_requested"] == [LAB2]
    assert sent["kwargs"] == {
        "agent": "ifsource-beta",
        "action": "clone",
        "clone_from": "ifsource",
        "definition": {"hermes": {"model": {"default": "beta-model"}}},
    }
    assert "cloned profile" in out, out
    assert row(LAB2, "ifsource-beta", "runtime", "running").search(out), out
    assert f'try it: hermes invoke ifsource-beta "..." workers {LAB2}' in flat(out)
    assert row(LAB2, "ifsource-beta", "yes", "running", "runtime", "beta-model").search(nfcli(app, "hermes agents"))

    assert "ECHO: who answers the clone" in nfcli(app, 'hermes invoke ifsource-beta "who answers the clone"')
    [request] = [r for r in model.model.completions() if "who answers the clone" in json.dumps(r["messages"])]
    assert request["model"] == "beta-model"

    nfcli(app, f"hermes clone ifsource-same from ifsource workers {LAB2}")  # without model: the original's
    assert "definition" not in last_job(nf.client, "manage_agent")["kwargs"]
    assert row(LAB2, "ifsource-same", "yes", "running", "runtime", "alpha-model").search(nfcli(app, "hermes agents"))


def test_stop_refuses_invokes_start_and_restart_serve_again(nf, app, files):
    create(app, "ifstop")
    out = nfcli(app, "hermes stop ifstop")
    assert last_job(nf.client, "manage_agent")["kwargs"] == {"agent": "ifstop", "action": "stop"}
    assert "detached agent 'ifstop' from the gateway" in flat(out)
    assert row(LAB2, "ifstop", "runtime", "stopped").search(out), out
    assert f"start it again: hermes start ifstop workers {LAB2}" in flat(out)
    assert row(LAB2, "ifstop", "no: stopped", "stopped", "runtime", "alpha-model").search(nfcli(app, "hermes agents"))

    refused = HermesShell.run(invoke=["ifstop", "hi"])  # what 'hermes invoke ifstop "hi"' prints
    assert "\x1b[31m" in red(refused)
    assert "agent 'ifstop' on worker 'hermes-lab-2' is stopped" in flat(red(refused))
    assert "is stopped" in flat(nfcli(app, 'hermes invoke ifstop "hi"'))

    out = nfcli(app, "hermes start ifstop")
    assert last_job(nf.client, "manage_agent")["kwargs"] == {"agent": "ifstop", "action": "start"}
    assert row(LAB2, "ifstop", "runtime", "running").search(out), out
    assert f'it takes runs: hermes invoke ifstop "..." workers {LAB2}' in flat(out)
    assert "ECHO: back again" in nfcli(app, 'hermes invoke ifstop "back again"')

    out = nfcli(app, f"hermes restart ifstop workers {LAB2}")
    assert last_job(nf.client, "manage_agent")["kwargs"] == {"agent": "ifstop", "action": "restart"}
    assert "detached agent 'ifstop'" in flat(out)
    assert "attached agent 'ifstop'" in flat(out)
    assert row(LAB2, "ifstop", "runtime", "running").search(out), out
    assert "ECHO: after restart" in nfcli(app, 'hermes invoke ifstop "after restart"')


def test_a_run_in_flight_refuses_stop_unless_interrupt(nf, app, files):
    create(app, "ifbusy")
    future, run_id = start_invoke(nf.client, LAB2, agent="ifbusy", instructions="SLEEP 30")
    out = nfcli(app, "hermes stop ifbusy")
    assert f"agent 'ifbusy' has runs in flight: {run_id}" in flat(out)
    assert "\x1b[31m" in red(HermesDeleteCommand.run(agent="ifbusy"))  # delete refuses too, in red
    out = nfcli(app, "hermes restart ifbusy interrupt")
    assert last_job(nf.client, "manage_agent")["kwargs"] == {"agent": "ifbusy", "action": "restart", "interrupt": True}
    assert f"interrupted runs {run_id}" in flat(out), out
    assert row(LAB2, "ifbusy", "runtime", "running").search(out), out
    assert result_of(future, LAB2)["result"]["stop_reason"] == "interrupted"


def test_delete_asks_first_on_a_terminal(nf, app, files, monkeypatch):
    create(app, "ifdoomed")
    master, slave = pty.openpty()
    with os.fdopen(slave, "r") as terminal:
        monkeypatch.setattr(sys, "stdin", terminal)
        prompts = []
        out = nfcli(app, f"hermes delete ifdoomed workers {LAB2}", ["n"], prompts)
        assert prompts == [
            f"delete agent 'ifdoomed' on worker '{LAB2}' (runtime, its profile, skills, memory and schedules)? [y/N] "
        ]
        assert "nothing deleted" in out
        assert last_job(nf.client, "manage_agent")["kwargs"]["action"] == "create"  # nothing sent
        assert row(LAB2, "ifdoomed", "yes", "running").search(nfcli(app, "hermes agents"))

        out = nfcli(app, "hermes delete ifdoomed", ["yes"])
        assert last_job(nf.client, "manage_agent")["kwargs"] == {"agent": "ifdoomed", "action": "delete"}
        assert "removed profile" in out
        assert "its sessions stay" in flat(out)
        assert row(LAB2, "ifdoomed", "runtime", "deleted").search(out), out
        assert f"the agents left: hermes agents workers {LAB2}" in flat(out)
        assert "ifdoomed" not in nfcli(app, "hermes agents")
        out = nfcli(app, "hermes delete ifdoomed", ["y"])  # gone: no question, the router's answer
        assert "agent 'ifdoomed' not found; known agents:" in flat(out)
    os.close(master)


def test_delete_without_a_terminal_needs_yes(nf, app, files):
    """A script has nobody to ask: it deletes only when it says yes."""
    create(app, "ifscripted")
    out = nfcli(app, f"hermes delete ifscripted workers {LAB2}")
    assert (
        f"nothing deleted: no terminal to ask on; to delete agent 'ifscripted' on worker '{LAB2}' with its profile, "
        f"skills, memory and schedules, say yes: hermes delete ifscripted workers {LAB2} yes"
    ) in flat(out)
    assert last_job(nf.client, "manage_agent")["kwargs"]["action"] == "create"  # nothing sent
    assert row(LAB2, "ifscripted", "yes", "running").search(nfcli(app, "hermes agents")), "the agent is gone"

    out = nfcli(app, f"hermes delete ifscripted workers {LAB2} yes")
    assert last_job(nf.client, "manage_agent")["kwargs"] == {"agent": "ifscripted", "action": "delete"}
    assert "removed profile" in out
    assert "ifscripted" not in nfcli(app, "hermes agents")


@pytest.mark.parametrize(
    "line, error",
    [
        (
            f"hermes create fresh from {SOURCE}",
            "hermes create needs exactly one worker by name in workers (none was given): the new agent's profile "
            "is made on that worker; alive hermes workers: hermes-lab-1, hermes-lab-2",
        ),
        (
            f"hermes create fresh from {SOURCE} workers hermes-lab-*",
            "needs exactly one worker by name in workers (not 'hermes-lab-*')",
        ),
        (f"hermes create fresh from {SOURCE} workers all", "needs exactly one worker by name in workers (not 'all')"),
        (
            f"hermes create fresh from {SOURCE} workers hermes-lab-1,hermes-lab-2",
            "needs exactly one worker by name in workers (not 'hermes-lab-1,hermes-lab-2')",
        ),
        (
            "hermes clone fresh from routing",
            "hermes clone needs exactly one worker by name in workers (none was given)",
        ),
        (
            f"hermes create fresh from {SOURCE} workers hermes-lab-3",
            "hermes worker 'hermes-lab-3' is not registered with the broker",
        ),
        (
            "hermes create fresh workers hermes-lab-1",
            "create takes one definition file: hermes create NAME from nf://PATH.yaml",
        ),
        (
            "hermes create fresh from nf://hermes/agents/nosuch.yaml workers hermes-lab-1",
            "could not fetch 'nf://hermes/agents/nosuch.yaml'",
        ),
        (
            f"hermes create routing from {SOURCE} workers hermes-lab-1",
            "'routing' already exists on worker 'hermes-lab-1'",
        ),
        (f"hermes create Fresh from {SOURCE} workers hermes-lab-1", "agent name 'Fresh' is not a valid profile name"),
        ("hermes clone fresh from nosuch workers hermes-lab-1", "agent 'nosuch' not found"),
        ("hermes clone fresh workers hermes-lab-1", "clone takes the agent to copy"),
        (
            "hermes clone fresh from routing model workers hermes-lab-1",
            "clone takes the agent to copy and at most one model",
        ),
        ("hermes create fresh from workers hermes-lab-1", "create takes one definition file"),
        ("hermes stop ospf", "agent 'ospf' not found; known agents: hermes-lab-1: interfaces, routing;"),
        (
            "hermes restart interfaces",
            "agent 'interfaces' is served by several hermes workers: hermes-lab-1, hermes-lab-2; choose one with workers",
        ),
        (
            "hermes start bgp workers hermes-lab-1",
            "agent 'bgp' not found; known agents: hermes-lab-1: interfaces, routing",
        ),
        (
            "hermes delete routing yes",
            "agent: 'routing' is defined in the worker's inventory; remove it there and restart the worker",
        ),
        ("hermes invoke bgp please delete routing", "'invoke' takes quoted text"),  # not 'hermes delete routing'
    ],
)
def test_lifecycle_errors_are_clear(nf, app, files, line, error):
    out = nfcli(app, line)
    assert error in flat(out), out
    assert "Traceback" not in out
    assert "fresh" not in nfcli(app, "hermes agents")


def test_errors_are_red_and_an_unquoted_keyword_changes_nothing(nf, app):
    sent = len(manage_jobs(nf))
    assert "'invoke' takes quoted text" in nfcli(app, "hermes invoke bgp then stop bgp")
    assert "'chat' takes quoted text" in nfcli(app, "hermes chat bgp delete routing")
    assert len(manage_jobs(nf)) == sent  # nothing stopped or deleted
    rendered = red(HermesDeleteCommand.run(agent="routing", yes=True))
    assert "\x1b[31m" in rendered
    assert "is defined in the worker's inventory" in flat(rendered)


def test_lifecycle_commands_in_the_hermes_subshell(nf, app, files):
    """Inside nf[hermes]# the values are validated against the hermes model ('from' is an alias)."""
    out = io.StringIO()
    with redirect_stdout(out):
        app.onecmd("hermes")
        try:
            app.onecmd(f"create ifsub from {SOURCE} workers {LAB1}")
            app.onecmd(f"clone ifsub-beta from ifsub workers {LAB1} model beta-model")
            app.onecmd("stop ifsub-beta interrupt")
            app.onecmd(f"create ifsub2 from {SOURCE} workers hermes-lab-*")
        finally:
            app.onecmd("top")
    assert app.prompt == "nf#"
    text = out.getvalue()
    assert row(LAB1, "ifsub", "runtime", "running").search(text), text
    assert row(LAB1, "ifsub-beta", "runtime", "stopped").search(text), text
    assert last_job(nf.client, "manage_agent")["kwargs"] == {"agent": "ifsub-beta", "action": "stop", "interrupt": True}
    assert "needs exactly one worker by name in workers (not 'hermes-lab-*')" in flat(text)
