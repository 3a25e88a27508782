"""
Matrix approvals end to end, with operators: real NorFab (broker, a nornir worker over FakeNOS switches, the
hermes worker), a real Synapse (norfab_hermes.testing.synapse) and every hermes task signed by an operator's
SSH key. A scheduled run's change parks an approval whose card the room reads (id, devices, digest, diff);
``approve <id>`` from the approver's Matrix user is answered, edits the card and the change runs (the nornir
job store, the switch's log); the same reply from an unmapped user, from a viewer, or for an expired approval
is refused in the room and nothing runs; a watched schedule that regresses is told once in the room, to a
webhook and by mail.
"""

import os
import time
from unittest import mock

import pytest
from conftest import WebhookReceiver, eventually, hermes_worker, network, norfab, ok, run
from test_changes import ENABLE_PORT, PORT_STATE, call, changes_to, device_log, job_finished, switch
from test_identity import keygen
from test_notify import Mailbox

from norfab_hermes.identity import mint
from norfab_hermes.testing.synapse import synapse_server

WORKER = "hermes-worker-1"
ROOM = "room"
TOKEN_ENV = "NORFAB_HERMES_TEST_MATRIX_E2E_TOKEN"
SECRET = "hook-secret-for-the-matrix-e2e"
HOSTS = ("sw1", "sw2", "sw3", "sw4")
ROLES = {
    "noc": {"*": ["operator", "admin"]},
    "lead": {"*": ["approver"]},
    "watch": {"*": ["viewer"]},
}


def agent(tools, **settings):
    return {"instructions": "You change ports.", "toolsets": ["norfab"], "run_timeout": 150, "tools": tools, **settings}


CHANGER = {"port_state": PORT_STATE, "enable_port": ENABLE_PORT}
AGENTS = {
    # watch is named an approver, but its roles make it a viewer: the roles decide (and the card says lead)
    "fixer": agent(CHANGER, approval_timeout=120, approvers=["lead", "watch"]),
    "hasty": agent(CHANGER, approval_timeout=3, approvers=["lead"]),
    "watcher": agent({"port_state": PORT_STATE}),
}


@pytest.fixture(scope="module")
def homeserver(request):
    failed = request.session.testsfailed
    with synapse_server(("hermes", "lead", "watch", "mallory")) as server:
        yield server
        reporter = request.config.pluginmanager.get_plugin("terminalreporter")
        if request.session.testsfailed > failed and reporter is not None:
            reporter.write_line(f"\nSynapse's log at {server.url}, its end:\n{server.log_tail()}")


@pytest.fixture(scope="module")
def lab(model, homeserver, tmp_path_factory):
    base = tmp_path_factory.mktemp("matrix-e2e")
    keys = {name: keygen(base, name, "ed25519") for name in ROLES}
    operators = {n: {"keys": [keys[n].path.with_suffix(".pub").read_text()], "roles": ROLES[n]} for n in ROLES}
    hook, mailbox = WebhookReceiver(SECRET), Mailbox(base)
    channels = {
        ROOM: {
            "type": "matrix",
            "homeserver": homeserver.url,
            "user_id": homeserver.users["hermes"].user_id,
            "token_env": TOKEN_ENV,
            "room_id": homeserver.room_id,
            "operators": {"@lead:localhost": "lead", "@watch:localhost": "watch"},
        },
        "hook": {"type": "webhook", "url": hook.url, "secret_env": "NOTIFY_E2E_HOOK_SECRET", "agents": ["watcher"]},
        "mail": mailbox.channel(agents=["watcher"]),
    }
    # a call parked in the inbox holds its target's tool slot: room for the next run's call
    inventory = hermes_worker(
        model.base_url, AGENTS, operators=operators, notify={"channels": channels}, tool_concurrency_per_worker=4
    )
    workers, files = network(list(HOSTS), models={h: switch(h) for h in HOSTS}, users={WORKER: inventory})
    env = {TOKEN_ENV: homeserver.users["hermes"].access_token, "NOTIFY_E2E_HOOK_SECRET": SECRET}
    try:
        with mock.patch.dict(os.environ, env), norfab(base, workers, files) as nf:
            noc = nf.make_client(name="noc-laptop")
            try:
                yield Lab(nf, base, homeserver, noc, keys["noc"], hook, mailbox)
            finally:
                noc.destroy()
    finally:
        mailbox.controller.stop()
        hook.stop()


class Lab:
    def __init__(self, nf, base, homeserver, client, signer, hook, mailbox):
        self.nf, self.base, self.homeserver, self.client, self.signer = nf, base, homeserver, client, signer
        self.hook, self.mailbox = hook, mailbox

    def signed(self, task, **kwargs):
        """``task`` sent by noc's client with noc's proof for exactly these arguments."""
        proof = mint(self.signer, task, [WORKER], kwargs, self.client.name, None, 120.0)
        return run(self.client, task, WORKER, proof=proof, **kwargs)

    def schedule(self, agent_name, **kwargs):
        return ok(self.signed("schedule", agent=agent_name, **kwargs))

    def history(self, agent_name, name):
        return self.schedule(agent_name, action="history", schedule_id=name)["history"]

    def scheduled(self, agent_name, name, prompt, **definition):
        """A schedule of ``agent_name`` created and run now (its hourly tick is far away)."""
        definition = {"name": name, "prompt": prompt, "schedule": "every 1h", **definition}
        self.schedule(agent_name, action="create", definition=definition)
        self.schedule(agent_name, action="run", schedule_id=name)

    def parked(self, agent_name):
        """The pending approval of ``agent_name``'s scheduled run."""
        return eventually(
            lambda: next(
                (a for a in ok(self.signed("get_approvals", agent=agent_name)) if a["state"] == "pending"), None
            ),
            f"{agent_name}'s scheduled run parked an approval",
        )

    def events(self, user="watch"):
        return self.homeserver.messages(self.homeserver.users[user].access_token, limit=200)

    def card(self, approval_id):
        """The approval's card as watch reads the room."""

        def find():
            for seen in self.events():
                fields = seen["content"].get("org.norfab.hermes") or {}
                if fields.get("approval_id") == approval_id and "m.relates_to" not in seen["content"]:
                    return seen
            return None

        return eventually(find, f"the card of approval {approval_id} in the room")

    def edit(self, event_id):
        def find():
            for seen in self.events():
                relates = seen["content"].get("m.relates_to") or {}
                if relates.get("rel_type") == "m.replace" and relates.get("event_id") == event_id:
                    return seen["content"]["m.new_content"]
            return None

        return eventually(find, f"the edit of {event_id}")

    def say(self, user, body):
        return self.homeserver.say(self.homeserver.users[user].access_token, {"msgtype": "m.text", "body": body})

    def answer(self, event_id):
        """The body of the worker's reply to ``event_id``."""

        def find():
            for seen in self.events():
                content = seen["content"]
                replied = (content.get("m.relates_to") or {}).get("m.in_reply_to", {}).get("event_id")
                if seen["sender"] == "@hermes:localhost" and replied == event_id:
                    return content["body"]
            return None

        return eventually(find, f"the worker's answer to {event_id}", timeout=30)


def test_an_approval_of_a_scheduled_run_is_decided_in_the_room_and_the_change_runs(lab):
    port = "GigabitEthernet0/3"
    lab.scheduled("fixer", "sw1-up", call("enable_port", FB="sw1", port=port))
    approval = lab.parked("fixer")
    approval_id = approval["approval_id"]
    assert approval["devices"] == ["sw1"] and approval["may_decide"] == ["lead"], approval
    assert changes_to(lab.base, "sw1") == []  # nothing ran before the approval

    card = lab.card(approval_id)
    body, html = card["content"]["body"], card["content"]["formatted_body"]
    assert card["sender"] == "@hermes:localhost"
    assert body.startswith(f"approval {approval_id} waits: enable_port on sw1")
    assert f"change digest: {approval['change_digest']}" in body
    assert "--- sw1" in body and f"interface {port}" in body and "no shutdown" in body  # the dry run's diff
    assert "<pre><code>--- sw1" in html
    assert body.endswith(f"reply: approve {approval_id}  or: deny {approval_id} [note]")

    asked = lab.say("lead", f"approve {approval_id}")
    assert lab.answer(asked) == f"approval {approval_id} approved by lead"
    edited = lab.edit(card["event_id"])
    assert edited["body"].startswith(f"approval {approval_id} approved by lead: enable_port on sw1")
    assert "reply: approve" not in edited["body"]

    [change] = eventually(lambda: changes_to(lab.base, "sw1"), "the change sent to sw1", timeout=90)
    assert change[0].startswith(f"{approval['run_id']}.fixer.")  # the job names the scheduled run
    eventually(lambda: job_finished(lab.base, change[0]), "the change job finished")
    [done] = eventually(lambda: lab.history("fixer", "sw1-up"), "the scheduled run's history", timeout=90)
    assert done["run_id"] == approval["run_id"] and done["status"] == "ok", done
    # read once the run is over: its check reads the switch after the change, on the same session
    assert device_log(lab.nf, "sw1") == ["1 configure", f"2 no shutdown {port}", "3 end"]
    [decided] = ok(lab.signed("get_run", agent="fixer", run_id=approval["run_id"]))["approvals"]
    assert (decided["state"], decided["decided_by"]) == ("approved", "lead")
    [noted] = [
        e for e in ok(lab.signed("get_audit", kind="approval.channel"))["entries"] if e["run_id"] == done["run_id"]
    ]
    assert noted["actor"] == "lead" and noted["data"] == {"approval_id": approval_id, "channel": ROOM}, noted
    lab.schedule("fixer", action="remove", schedule_id="sw1-up")


def test_an_unmapped_user_a_viewer_and_an_expired_approval_are_refused_in_the_room_and_nothing_runs(lab):
    log = device_log(lab.nf, "sw2")
    assert log == ["(no changes)"]
    lab.scheduled("fixer", "sw2-up", call("enable_port", FB="sw2", port="GigabitEthernet0/3"))
    approval_id = lab.parked("fixer")["approval_id"]
    lab.card(approval_id)

    asked = lab.say("mallory", f"approve {approval_id}")
    assert lab.answer(asked) == (
        f"@mallory:localhost is not mapped to an operator: add it under notify.channels.{ROOM}.operators"
    )
    asked = lab.say("watch", f"approve {approval_id}")
    assert lab.answer(asked) == (
        f"refused: operator 'watch' may not decide approval '{approval_id}': it needs role approver for agent "
        "'fixer' (operators.watch.roles)"
    )
    [still] = [a for a in ok(lab.signed("get_approvals", agent="fixer")) if a["approval_id"] == approval_id]
    assert still["state"] == "pending" and still["approved_by"] == []
    time.sleep(1)  # a change sent by mistake would be in the job store by now
    assert changes_to(lab.base, "sw2") == [] and device_log(lab.nf, "sw2") == log

    asked = lab.say("lead", f"deny {approval_id} not from a viewer")
    assert lab.answer(asked) == f"approval {approval_id} denied by lead"
    [done] = eventually(lambda: lab.history("fixer", "sw2-up"), "the denied run's history", timeout=90)
    assert changes_to(lab.base, "sw2") == [] and device_log(lab.nf, "sw2") == log
    lab.schedule("fixer", action="remove", schedule_id="sw2-up")

    # an approval that expired before the approver answered
    log = device_log(lab.nf, "sw3")
    assert log == ["(no changes)"]
    lab.scheduled("hasty", "sw3-up", call("enable_port", FB="sw3", port="GigabitEthernet0/3"))
    approval = lab.parked("hasty")
    approval_id = approval["approval_id"]

    def expired():
        state = ok(lab.signed("get_run", agent="hasty", run_id=approval["run_id"]))
        return any(a["approval_id"] == approval_id and a["state"] == "expired" for a in state["approvals"])

    eventually(expired, f"approval {approval_id} expired", timeout=30)
    card = lab.card(approval_id)
    assert lab.edit(card["event_id"])["body"].startswith(f"approval {approval_id} expired")
    asked = lab.say("lead", f"approve {approval_id}")
    refusal = lab.answer(asked)
    assert refusal == f"refused: approval_id: approval '{approval_id}' is already expired", refusal
    eventually(lambda: lab.history("hasty", "sw3-up"), "the expired run's history", timeout=90)
    time.sleep(1)
    assert changes_to(lab.base, "sw3") == [] and device_log(lab.nf, "sw3") == log
    lab.schedule("hasty", action="remove", schedule_id="sw3-up")


def test_a_watched_schedule_that_regresses_is_told_once_in_the_room_to_the_webhook_and_by_mail(lab):
    port = "GigabitEthernet0/1"
    criterion = {"tool": "port_state", "device": "sw4", "match": f"{port} is up", "name": "sw4 Gi0/1 up"}
    lab.scheduled("watcher", "sw4-gi01", call("port_state", FB="sw4", port=port), criteria=[criterion])
    [first] = eventually(lambda: lab.history("watcher", "sw4-gi01"), "the first run", timeout=90)
    assert first["status"] == "ok", first
    reply = lab.nf.client.run_job("nornir", "cfg", kwargs={"FB": "sw4", "config": [f"interface {port}", "shutdown"]})
    assert not any(r["failed"] for r in reply.values()), reply
    lab.schedule("watcher", action="run", schedule_id="sw4-gi01")
    regressed = eventually(
        lambda: (lambda h: h[0] if len(h) == 2 else None)(lab.history("watcher", "sw4-gi01")), "the second run", 90
    )
    assert regressed["status"] == "regressed", regressed

    summary = f"schedule {regressed['schedule_id']} of watcher regressed: sw4 Gi0/1 up"

    def told():
        return [e for e in lab.events() if e["content"].get("body", "").startswith(summary)]

    [message] = eventually(told, "the regression in the room")
    assert "NOT met: sw4 Gi0/1 up" in message["content"]["body"]
    assert f"hermes run {regressed['run_id']}" in message["content"]["body"]
    [post] = eventually(lambda: [p for p in lab.hook.posts if p["kind"] == "regressed"], "the regression posted")
    assert post["run_id"] == regressed["run_id"]
    [mail] = eventually(lambda: lab.mailbox.about("regressed"), "the regression mailed")
    assert "NOT met: sw4 Gi0/1 up" in mail.get_content()
    time.sleep(1)  # told once: nothing more follows
    assert len(told()) == 1 and lab.hook.kinds().count("regressed") == 1 and len(lab.mailbox.about("regressed")) == 1
    lab.schedule("watcher", action="remove", schedule_id="sw4-gi01")
