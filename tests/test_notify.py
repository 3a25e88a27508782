"""
Notifications, end to end on real NorFab: a watched schedule on a FakeNOS
switch regresses and recovers, changes park approvals, one rolls back, and
each of those reaches a real webhook receiver (which checks the HMAC
signature itself) and a real SMTP server over STARTTLS (aiosmtpd, with a
certificate made here), once; a channel that is down fails nothing and ends
its message in the dead letters; ``notify`` sends a test message and
``get_status`` shows each channel.
"""

import datetime
import email
import email.policy
import ipaddress
import os
import ssl
from unittest import mock

import pytest
from conftest import WebhookReceiver, eventually, free_port, hermes_worker, network, norfab, run
from test_changes import ENABLE_PORT, PORT_STATE, call, job_finished, switch

WORKER = "hermes-worker-1"
LEAD = "change-lead"
SECRET = "hook-secret-for-tests"
PORT_UP = {"tool": "port_state", "device": "sw1", "match": "GigabitEthernet0/1 is up", "name": "Gi0/1 up"}


def agent(tools, **settings):
    return {
        "instructions": "You watch and change ports.",
        "toolsets": ["norfab"],
        "run_timeout": 120,
        "tools": tools,
        **settings,
    }


AGENTS = {
    "watcher": agent({"port_state": PORT_STATE}),
    "fixer": agent({"port_state": PORT_STATE, "enable_port": ENABLE_PORT}, approval_timeout=90),
}


def certificate(folder):
    """A self-signed certificate for 127.0.0.1: the SMTP server's, and the CA file the channel trusts."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = folder / "smtp.pem", folder / "smtp.key"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_file, key_file


class Mailbox:
    """A real SMTP server (aiosmtpd) that takes mail only after STARTTLS."""

    def __init__(self, folder):
        from aiosmtpd.controller import Controller

        self.mails = []
        self.ca_file, key_file = certificate(folder)
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(self.ca_file, key_file)
        self.port = free_port()
        self.controller = Controller(
            self, hostname="127.0.0.1", port=self.port, tls_context=context, require_starttls=True
        )
        self.controller.start()

    async def handle_DATA(self, server, session, envelope):
        self.mails.append(email.message_from_bytes(envelope.content, policy=email.policy.default))
        return "250 OK"

    def about(self, text):
        return [m for m in self.mails if text in m["Subject"]]

    def channel(self, **extra):
        """An email channel to this mailbox, STARTTLS with its certificate."""
        return {
            "type": "email",
            "host": "127.0.0.1",
            "port": self.port,
            "starttls": True,
            "ca_file": str(self.ca_file),
            "sender": "hermes@lab.example",
            "to": ["noc@lab.example"],
            **extra,
        }


@pytest.fixture(scope="module")
def lab(model, tmp_path_factory):
    base = tmp_path_factory.mktemp("notify")
    hook, mailbox = WebhookReceiver(SECRET), Mailbox(base)
    channels = {
        "hook": {"type": "webhook", "url": hook.url, "secret_env": "NOTIFY_TEST_HOOK_SECRET"},
        "mail": mailbox.channel(agents=["watcher", "fix*"]),
        # nobody listens there: its messages fail, and after two attempts are dead letters
        "nowhere": {
            "type": "webhook",
            "url": f"http://127.0.0.1:{free_port()}/",
            "max_attempts": 2,
            "events": ["test"],
        },
        "unset": {"type": "webhook", "url": hook.url, "secret_env": "NOTIFY_TEST_NOT_SET"},
    }
    inventory = hermes_worker(model.base_url, AGENTS, notify={"channels": channels})
    workers, files = network(["sw1", "sw2"], models={h: switch(h) for h in ("sw1", "sw2")}, users={WORKER: inventory})
    with mock.patch.dict(os.environ, {"NOTIFY_TEST_HOOK_SECRET": SECRET}):
        with norfab(base, workers, files) as nf:
            yield nf, base, hook, mailbox
    mailbox.controller.stop()
    hook.stop()


def ok(reply):
    assert not reply["failed"], reply["errors"]
    return reply["result"]


def run_schedule(nf, name, count):
    ok(run(nf.client, "schedule", worker=WORKER, agent="watcher", action="run", schedule_id=name))
    return eventually(
        lambda: (lambda h: h[0] if len(h) >= count else None)(
            ok(run(nf.client, "schedule", worker=WORKER, agent="watcher", action="history", schedule_id=name))[
                "history"
            ]
        ),
        f"run {count} of schedule {name}",
        timeout=90,
    )


def port(nf, host, name, shut):
    reply = nf.client.run_job(
        "nornir", "cfg", kwargs={"FB": host, "config": [f"interface {name}", "shutdown" if shut else "no shutdown"]}
    )
    assert not any(r["failed"] for r in reply.values()), reply


def test_a_watched_schedule_that_regresses_and_recovers_is_told_once_to_the_webhook_and_by_mail(lab):
    nf, _, hook, mailbox = lab
    prompt = call("port_state", FB="sw1", port="GigabitEthernet0/1")
    definition = {"name": "gi01", "prompt": prompt, "schedule": "every 1h", "criteria": [PORT_UP]}
    ok(run(nf.client, "schedule", worker=WORKER, agent="watcher", action="create", definition=definition))

    assert run_schedule(nf, "gi01", 1)["status"] == "ok"
    port(nf, "sw1", "GigabitEthernet0/1", shut=True)
    regressed = run_schedule(nf, "gi01", 2)
    assert regressed["status"] == "regressed", regressed
    [post] = eventually(lambda: [p for p in hook.posts if p["kind"] == "regressed"], "the regression posted")
    assert post["agent"] == "watcher" and post["worker"] == WORKER and "Gi0/1 up" in post["summary"]
    assert post["run_id"] == regressed["run_id"] and post["reference"] == f"hermes run {regressed['run_id']}"
    assert post["evidence"] == [a["artifact_id"] for a in regressed["artifacts"]] and post["evidence"]
    [mail] = eventually(lambda: mailbox.about("regressed"), "the regression mailed")
    assert mail["To"] == "noc@lab.example" and mail["Subject"].strip().startswith("[hermes] watcher: schedule ")
    body = mail.get_content()
    assert "NOT met: Gi0/1 up" in body and f"open: hermes run {regressed['run_id']}" in body

    port(nf, "sw1", "GigabitEthernet0/1", shut=False)
    recovered = run_schedule(nf, "gi01", 3)
    assert recovered["status"] == "recovered"
    eventually(lambda: "recovered" in hook.kinds() and mailbox.about("recovered"), "the recovery told")
    assert hook.kinds().count("regressed") == 1 and len(mailbox.about("regressed")) == 1
    ok(run(nf.client, "schedule", worker=WORKER, agent="watcher", action="remove", schedule_id="gi01"))


def test_two_approvals_parked_at_once_get_two_cards_decided_apart_and_a_rollback_is_told(lab):
    nf, base, hook, mailbox = lab
    lead = nf.make_client(name=LEAD)
    try:
        # sw1 Gi0/3 comes up; sw2 Gi0/2 has no cable: its check fails and the change is rolled back
        first = ok(
            run(
                nf.client,
                "start_run",
                worker=WORKER,
                agent="fixer",
                instructions=call("enable_port", FB="sw1", port="GigabitEthernet0/3"),
            )
        )
        second = ok(
            run(
                nf.client,
                "start_run",
                worker=WORKER,
                agent="fixer",
                instructions=call("enable_port", FB="sw2", port="GigabitEthernet0/2"),
            )
        )
        cards = eventually(
            lambda: (lambda c: c if len(c) == 2 else None)(
                [p for p in hook.posts if p["kind"] == "approval_requested"]
            ),
            "two approval cards",
        )
        by_run = {card["run_id"]: card for card in cards}
        assert set(by_run) == {first["run_id"], second["run_id"]}
        one, other = by_run[first["run_id"]], by_run[second["run_id"]]
        assert one["approval_id"] != other["approval_id"] and one["key"] != other["key"]
        assert one["data"]["devices"] == ["sw1"] and "no shutdown" in one["diff"] and "--- sw1" in one["diff"]
        assert one["data"]["change_digest"] in "\n".join(one["details"])
        pending = {a["approval_id"]: a for a in ok(run(nf.client, "get_approvals", worker=WORKER))}
        assert set(pending) == {one["approval_id"], other["approval_id"]}

        ok(run(lead, "approve", worker=WORKER, approval_id=other["approval_id"], note="try it"))
        eventually(lambda: hook.kinds(other["key"]) == ["approval_requested", "approval_decided"], "the second decided")
        assert hook.kinds(one["key"]) == ["approval_requested"]  # the other card is untouched
        ok(run(nf.client, "deny", worker=WORKER, approval_id=one["approval_id"], note="not now"))
        [decided] = eventually(
            lambda: [p for p in hook.posts if p["key"] == one["key"] and p["kind"] != "approval_requested"],
            "the first decided",
        )
        assert decided["data"]["state"] == "denied" and "not now" in decided["summary"]

        [rolled] = eventually(
            lambda: [p for p in hook.posts if p["kind"] == "rolled_back"], "the rollback told", timeout=90
        )
        assert rolled["run_id"] == second["run_id"] and rolled["data"]["devices"] == ["sw2"]
        assert job_finished(base, rolled["data"]["job_uuid"])  # the change job the card names ran on nornir
        # by mail, each decision in its request's thread
        requested = eventually(lambda: (lambda m: m if len(m) == 2 else None)(mailbox.about("waits")), "two mails")
        decisions = eventually(
            lambda: (lambda m: m if len(m) == 2 else None)([m for m in mailbox.mails if m["In-Reply-To"]]),
            "two decisions",
        )
        assert {m["In-Reply-To"] for m in decisions} == {m["Message-ID"] for m in requested}
        assert any("no shutdown" in m.get_content() for m in requested)
    finally:
        lead.destroy()


def test_notify_sends_a_test_message_and_get_status_shows_each_channel(lab):
    nf, _, hook, _ = lab
    result = ok(run(nf.client, "notify", worker=WORKER, action="test", channel="hook"))
    assert result["test"]["state"] == "sent" and hook.kinds()[-1] == "test"

    dead = ok(run(nf.client, "notify", worker=WORKER, action="test", channel="nowhere", timeout=30))
    assert dead["test"]["state"] == "dead" and "Connection refused" in dead["test"]["error"]
    status = ok(run(nf.client, "get_status", worker=WORKER))
    assert status["ready"] is True, status["errors"]  # a channel that fails fails no run and no readiness
    channels = status["notify"]
    assert channels["hook"]["health"] == "ok" and channels["hook"]["sent"] >= 1 and channels["hook"]["waiting"] == 0
    assert channels["nowhere"]["health"] == "failing" and channels["nowhere"]["dead"] == 1
    assert channels["nowhere"]["dead_letters"][0]["attempts"] == 2
    assert channels["unset"]["health"] == "not_running"
    assert "NOTIFY_TEST_NOT_SET is not set" in channels["unset"]["error"]

    refused = run(nf.client, "notify", worker=WORKER, action="test", channel="pager")
    assert refused["failed"] and "channel: 'pager' is not a notification channel" in refused["errors"][0]
    refused = run(nf.client, "notify", worker=WORKER, action="test")
    assert refused["failed"] and "channel: action test needs the channel's name" in refused["errors"][0]


def test_the_shell_sends_a_test_message_and_shows_the_channels_at_80_columns(lab):
    nf, _, hook, _ = lab
    from conftest import hermes_shell
    from test_shell import fits, nfcli, terminal_width

    with hermes_shell(nf) as app, terminal_width(80):
        out = fits(nfcli(app, 'hermes notify test hook text "from the shell"'))
        assert f"{WORKER}: test message sent" in out and "hook (webhook)" in out
        assert hook.posts[-1]["summary"].endswith(": from the shell")
        out = fits(nfcli(app, "hermes status"))
        assert "notification channels" in out and "not_running" in out and "nowhere" in out
        out = fits(nfcli(app, "hermes notify test pager"))
        assert "'pager' is not a notification channel" in out
