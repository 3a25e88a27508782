"""
The lab investigation, end to end: NorFab with FakeNOS routers (r1-r3 for
the demo; the rest are the operator jobs' network of `make eval`), a
nornir worker and two hermes workers - hermes-worker-1 next to the broker,
hermes-worker-2 started as a process of its own from core/inventory.yaml, as
on another host - two questions, the second answered with the help of the
routing agent on the other worker, and the interface check left running as a
scheduled check.

    python examples/lab/demo.py            (or: make demo)

By default the agents run on the package's scripted model, which follows
scenarios/demo.yaml and quotes what the tools returned. To use a real
OpenAI-compatible provider instead, set:

    NORFAB_HERMES_BASE_URL     e.g. https://openrouter.ai/api/v1, http://127.0.0.1:11434/v1
    NORFAB_HERMES_MODEL        the model id
    NORFAB_HERMES_API_KEY_ENV  name of the variable holding the key, e.g. OPENROUTER_API_KEY
    NORFAB_HERMES_PROVIDER     Hermes provider slug (default: custom)

Identity is on: the demo makes the lab's operators' keys under identity/
(never in ~/.ssh; git ignores them) and the operators file the hermes
workers read. The demo signs as operator noc (NORFAB_HERMES_KEY), and the
agent's change waits for another operator (four eyes): the demo approves it
as lead, with lead's key. hermes-worker-1 signs what it asks the routing
agent on hermes-worker-2 with a key of its own (delegation_key). The
scheduled check runs with nobody to ask: its remediation stays
approval-gated, so it reports and recommends and never changes a device on
its own.
"""

import os
import re
import sys
import textwrap
import time
from pathlib import Path
from typing import Any, Dict

import yaml

from norfab_hermes.identity.client import KEY_ENV, configured_signer, signed
from norfab_hermes.identity.keys import new_key
from norfab_hermes.identity.signatures import signer_for
from norfab_hermes.routing import Hermes
from norfab_hermes.testing.embedded import free_port, remote_worker, started
from norfab_hermes.testing.scenario import Scenario
from norfab_hermes.testing.scripted_model import ScriptedModel, ScriptedModelServer

LAB = Path(__file__).resolve().parent
WORKER = "hermes-worker-1"
CORE = "hermes-worker-2"  # started from LAB / "core", as on a host of its own
WORKERS = ["fakenos-worker-1", "nornir-worker-1", WORKER]
IDENTITY = LAB / "identity"  # the lab's operators' keys and operators file, made here (git ignores them)
IDENTITY_ENV = "NORFAB_HERMES_LAB_IDENTITY"  # the lab's inventory names its operators when this is set
OPERATORS = {
    "noc": {"*": ["operator", "admin"]},  # asks the agents (the demo's and the shell's client)
    "lead": {"*": ["approver"]},  # approves their changes: four eyes
    WORKER: {"routing": ["operator"]},  # hermes-worker-1's own key: the questions it delegates
    CORE: {"interfaces": ["viewer"]},  # hermes-worker-2's own key: it reads the asking run to confirm a question
}
APPROVAL = re.compile(r"waiting for approval (\w+):")
QUESTIONS = [
    ("interfaces", "Check interfaces on r1"),
    # interfaces checks r3 itself and asks the routing agent on the core worker why
    ("interfaces", "Users behind r3 say r1's loopback 10.0.0.1 is slow"),
]


def lab_identity() -> Path:
    """The lab's operators: their keys (made once), the file the hermes workers read; this process signs as noc."""
    operators = {
        name: {"keys": [new_key(IDENTITY / name, f"{name}@norfab-hermes-lab")], "roles": roles}
        for name, roles in OPERATORS.items()
    }
    (IDENTITY / "operators.yaml").write_text(yaml.safe_dump(operators, sort_keys=False))
    os.environ[IDENTITY_ENV] = str(IDENTITY)
    os.environ[KEY_ENV] = str(IDENTITY / "noc")
    return IDENTITY


def job(client: Any, task: str, kwargs: Dict[str, Any], worker: str = WORKER) -> Dict[str, Any]:
    """A hermes job's arguments, signed by this process's operator (NORFAB_HERMES_KEY)."""
    return signed(configured_signer(), client.name, task, [worker], kwargs)


def scripted_model() -> ScriptedModelServer:
    """The lab's scripted model, unless a real provider is configured."""
    scenario = Scenario.from_file(str(LAB / "scenarios" / "demo.yaml"))
    server = ScriptedModelServer(ScriptedModel(scenario=scenario), port=free_port())
    os.environ["NORFAB_HERMES_BASE_URL"] = server.start()
    return server


def is_step(message: str) -> bool:
    """Run and tool steps, the asked agent's too ("routing@hermes-worker-2: ..."); the nornir
    jobs' own progress ("tool x: ...") stays out of the transcript."""
    while message.split(" ", 1)[0].count("@") == 1 and message.split(" ", 1)[0].endswith(":"):
        message = message.split(" ", 1)[1]
    words = message.split(" ", 2)
    return message != "starting" and not (words[0] == "tool" and len(words) > 1 and words[1].endswith(":"))


def ask(client: Any, lead: Hermes, agent: str, question: str) -> dict:
    """One interactive invoke: print its events as they come; lead approves the change it asks for."""
    print(f'\nnf# hermes invoke {agent} "{question}"\n')
    kwargs = {"agent": agent, "instructions": question, "interactive": True}
    future = client.submit_job("hermes", "invoke", kwargs=job(client, "invoke", kwargs), workers=WORKER, timeout=300)
    for event in future.events(timeout=300):
        request = (event.get("extras") or {}).get("input_request")
        if event.get("event_type") == "input_request" and request:  # a lab without operators asks inline
            print(f"  ? {request['question']}\n  operator: yes")
            future.send_response(input_id=request["id"], value=True, worker=WORKER)
        elif event.get("event_type") == "progress" and event.get("task") == "invoke" and is_step(event["message"]):
            print(f"  {event['message']}")
            waiting = APPROVAL.match(event["message"])
            if waiting:
                print(f"  nf# hermes approve {waiting.group(1)}    (operator lead, with lead's key: four eyes)")
                [answer] = lead.approve(waiting.group(1), note="demo: lead checked the change").values()
                print(f"  {answer['result']['state']} by {answer['result']['decided_by']}")
    reply = future.result(timeout=60)[WORKER]
    if reply["failed"]:
        raise SystemExit(f"{agent} failed: {reply['errors']}")
    return reply["result"]


def report(result: dict) -> None:
    print("\n" + textwrap.indent(result["response"], "  ") + "\n")
    for call in result["tool_calls"]:
        asked = call.get("delegated")
        where = (
            f"  -> {asked['agent']}@{asked['worker']} run {asked['run_id']} session {asked['session_id']}"
            if asked
            else ""
        )
        print(
            f"  tool {call['tool']:<17} {call['status']:<9} {call['duration']:5.2f}s  job {call['job_uuid'] or '-'}{where}"
        )
    usage = result["usage"]
    print(
        f"\n  {result['stop_reason']} | run {result['run_id']} | session {result['session_id']} | "
        f"worker {result['worker']} | {usage['api_calls']} model calls, {usage['total_tokens']} tokens"
    )
    print(
        f'  continue: nf# hermes invoke {result["agent"]} "..." session {result["session_id"]} workers {result["worker"]}'
    )


SCHEDULE = {"name": "r1-interfaces", "prompt": "Check interfaces on r1", "schedule": "* * * * * */10"}


def schedule(client: Any, **kwargs: Any) -> dict:
    kwargs = job(client, "schedule", {"agent": "interfaces", **kwargs})
    reply = client.run_job("hermes", "schedule", kwargs=kwargs, workers=WORKER, timeout=60)
    if reply[WORKER]["failed"]:
        raise SystemExit(f"schedule {kwargs['action']} failed: {reply[WORKER]['errors']}")
    return reply[WORKER]["result"]


def scheduled_check(client: Any) -> None:
    """The interface check as a schedule: created, fired on its own, its history read back."""
    print(
        f'\nnf# hermes schedule interfaces add "{SCHEDULE["schedule"]}" "{SCHEDULE["prompt"]}" name {SCHEDULE["name"]}\n'
    )
    if any(s["name"] == SCHEDULE["name"] for s in schedule(client, action="list")["schedules"]):
        schedule(client, action="remove", schedule_id=SCHEDULE["name"])  # left paused by an earlier demo
    created = schedule(client, action="create", definition=SCHEDULE)
    print(f"  {created['message']} (every 10 s: a sixth cron field counts seconds)")
    deadline = time.time() + 60
    runs = []
    while not runs and time.time() < deadline:
        time.sleep(1)
        runs = [
            r
            for r in schedule(client, action="history", schedule_id=SCHEDULE["name"])["history"]
            if r["status"] != "missed"
        ]
    schedule(client, action="pause", schedule_id=SCHEDULE["name"])
    if not runs:
        raise SystemExit("the schedule did not fire within 60 s")
    print(f"\nnf# hermes history interfaces schedule {SCHEDULE['name']}\n")
    for run in runs:
        print(
            f"  {run['status']} | due {run['due']} | started {run['started']} | {run['duration']:.1f}s | session {run['session_id']}"
        )
        print("\n" + textwrap.indent(run["response"], "  ") + "\n")
        for call in run["tool_calls"]:
            print(f"  tool {call['tool']:<17} {call['status']:<9} job {call['job_uuid'] or '-'}  {call['error'] or ''}")
    print(f"\n  the schedule is paused now: nf# hermes resume interfaces schedule {SCHEDULE['name']}")


def investigate(client: Any, lead: Hermes) -> None:
    """Both workers ready, the two questions, the scheduled check."""
    for worker in (WORKER, CORE):
        reply = client.run_job("hermes", "get_status", kwargs=job(client, "get_status", {}, worker), workers=worker)
        result = reply[worker]
        if result["failed"] or not result["result"]["ready"]:
            raise SystemExit(f"{worker} not ready: {result['errors'] or result['result']['errors']}")
        status = result["result"]
        print(f"agents on {worker} (pid {status['pid']}): {', '.join(status['agents'])}")
        print(f"  identity: {status['identity']}")
    for agent, question in QUESTIONS:
        report(ask(client, lead, agent, question))
    scheduled_check(client)


def main() -> None:
    model = None if os.environ.get("NORFAB_HERMES_BASE_URL") else scripted_model()
    where = "scripted model (scenarios/demo.yaml)" if model else os.environ["NORFAB_HERMES_BASE_URL"]
    print(f"model: {where}\nstarting NorFab lab from {LAB / 'inventory.yaml'} ...")
    folder = lab_identity()
    print(f"identity on: operators {', '.join(OPERATORS)} (keys in {folder}); this client signs as noc")
    try:
        with started(LAB / "inventory.yaml", WORKERS) as nf:
            print(f"starting {CORE} as its own process: cd {LAB / 'core'} && nfcli -i inventory.yaml -w")
            with remote_worker(nf, CORE, LAB / "core"):
                lead_desk = nf.make_client(name="lead-desk")  # the second operator's client
                try:
                    investigate(nf.client, Hermes(lead_desk, signer=signer_for(folder / "lead")[0]))
                finally:
                    lead_desk.destroy()
                print("\nshutting down ...")
    finally:
        if model:
            model.stop()


if __name__ == "__main__":
    sys.exit(main())
