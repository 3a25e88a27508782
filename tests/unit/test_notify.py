"""The notifier's pure parts with fakes: the outbox's order, dedupe and dead letters, a channel's
retries, webhook bodies and signatures, what a card shows of a change."""

import json
import threading
import time
from pathlib import Path

import pytest

from norfab_hermes.errors import InventoryError
from norfab_hermes.models import ApprovalInfo, WebhookChannel
from norfab_hermes.worker.notify import messages
from norfab_hermes.worker.notify.channel import Message
from norfab_hermes.worker.notify.delivery import ChannelDelivery, retry_after
from norfab_hermes.worker.notify.outbox import NotifyOutbox
from norfab_hermes.worker.notify.webhook import WebhookTransport, signature, verify


def message(key="k", kind="test", summary="s"):
    return Message(f"id-{key}-{kind}", kind, key, "noc", "w1", summary, "hermes status", "2026-12-02T00:00:00+00:00")


class Flaky:
    """A transport that fails its first ``failures`` sends."""

    name, updates_in_place = "flaky", False

    def __init__(self, failures):
        self.failures, self.sent = failures, []

    def send(self, m):
        if self.failures:
            self.failures -= 1
            raise ConnectionError("down")
        self.sent.append(m.key)

    def close(self):
        pass


def test_the_outbox_keeps_one_message_per_channel_subject_and_event_in_order(tmp_path):
    outbox = NotifyOutbox(tmp_path)
    assert outbox.put(["a", "b"], message("1")) == ["a", "b"]
    assert outbox.put(["a"], message("1")) == []  # told twice: one card
    outbox.put(["a"], message("2"))
    seq, first, attempts, _ = outbox.first("a")
    assert (first.key, attempts) == ("1", 0)
    outbox.sent(seq, "a", "1", None)
    assert outbox.first("a")[1].key == "2"
    assert outbox.counts("a") == {"waiting": 1, "sent": 1, "dead": 0}


def test_a_channel_retries_with_backoff_then_dead_letters_and_goes_on(tmp_path, monkeypatch):
    monkeypatch.setattr("norfab_hermes.worker.notify.delivery.FIRST_RETRY", 0.01)
    outbox, stopping = NotifyOutbox(tmp_path), threading.Event()
    transport = Flaky(failures=3)
    outbox.put(["flaky"], message("1"))
    outbox.put(["flaky"], message("2"))
    delivery = ChannelDelivery("w1", transport, outbox, 1000, 3, stopping)
    delivery.start()
    deadline = time.time() + 10
    while transport.sent != ["2"] and time.time() < deadline:
        time.sleep(0.02)
    stopping.set()
    delivery.join(5)
    assert transport.sent == ["2"]  # 1 failed three times: a dead letter; 2 went on after it
    [dead] = outbox.dead("flaky")
    assert (dead["key"], dead["attempts"], dead["error"]) == ("1", 3, "ConnectionError: down")


def test_backoff_doubles_up_to_a_minute():
    assert [retry_after(n) for n in (1, 2, 3, 7, 30)] == [1.0, 2.0, 4.0, 60.0, 60.0]


def test_a_signature_verifies_only_for_its_body_secret_and_a_fresh_timestamp():
    sent = signature("s3cret", "1700000000", b'{"a": 1}')
    assert verify("s3cret", "1700000000", b'{"a": 1}', sent, now=1700000100)
    assert not verify("s3cret", "1700000000", b'{"a": 2}', sent, now=1700000100)
    assert not verify("other", "1700000000", b'{"a": 1}', sent, now=1700000100)
    assert not verify("s3cret", "1700000000", b'{"a": 1}', sent, now=1700001000)  # a replay, too late


SLACK = '{"text": {{ m.text | tojson }}}'


def test_a_template_makes_json_whatever_the_device_printed():
    hook = WebhookTransport("slack", WebhookChannel(type="webhook", url="https://x/", template=SLACK))
    hostile = message(summary='port "Gi0/1"\n}, {"injected": true} <script>')
    body = json.loads(hook.body(hostile))
    assert list(body) == ["text"] and body["text"].startswith('port "Gi0/1"\n}, {"injected": true} <script>')


def test_a_template_that_makes_no_json_is_refused_at_start_naming_the_field():
    with pytest.raises(InventoryError, match="notify.channels.bad.template: does not render JSON"):
        WebhookTransport("bad", WebhookChannel(type="webhook", url="https://x/", template='{"text": {{ m.text }}}'))


def test_an_unset_secret_variable_is_named_with_the_fix(monkeypatch):
    monkeypatch.delenv("HOOK_SECRET_UNSET", raising=False)
    with pytest.raises(InventoryError, match="secret_env: environment variable HOOK_SECRET_UNSET is not set"):
        WebhookTransport("h", WebhookChannel(type="webhook", url="https://x/", secret_env="HOOK_SECRET_UNSET"))


def test_an_approval_card_shows_the_change_and_cuts_a_long_diff():
    preview = {"sw1": "\n".join(f"line {n}" for n in range(100))}
    info = ApprovalInfo(
        approval_id="0123456789ab", run_id="r1", agent="fixer", worker="w1", tool="enable_port", target="nornir.cfg",
        arguments_digest="ad", state="pending", requested="t", expires="2026-12-02T03:10:00+00:00",
        requested_by="noc", may_decide=["lead"], devices=["sw1"], preview=preview, change_digest="cd42",
    )  # fmt: skip
    card = messages.approval(info, "requested")
    assert card.key == "approval:0123456789ab" and card.kind == "approval_requested"
    assert "asked by noc" in card.summary and "who may decide: lead" in card.details
    assert "change digest: cd42" in card.details and "expires: 2026-12-02T03:10:00+00:00" in card.details
    lines = card.diff.splitlines()
    assert lines[0] == "--- sw1" and len(lines) == messages.DIFF_LINES + 1
    assert lines[-1] == "... 61 more lines: hermes approvals agent fixer"
    assert messages.approval(info, "partly_approved") is None  # the card waits for the last approver
    decided = messages.approval(info.model_copy(update={"state": "approved", "decided_by": "lead"}), "decided")
    assert decided.key == card.key and "approved by lead" in decided.summary


class Queued:
    """The outbox as the notifier fills it: what was queued for which channels."""

    def __init__(self):
        self.put_calls = []

    def put(self, channels, m):
        self.put_calls.append((sorted(channels), m.kind, m.key))
        return channels


def notifier(channels):
    from norfab_hermes.models import NotifySettings
    from norfab_hermes.worker.notify.notifier import Notifier

    settings = NotifySettings.model_validate({"channels": channels})
    found = Notifier("w1", Path("/nonexistent"), NotifySettings())  # no outbox of its own: the fake below
    found.settings, found.outbox = settings, Queued()
    return found


HOOK = {"type": "webhook", "url": "https://x/"}


def test_each_event_goes_to_the_channels_whose_agents_and_events_match():
    found = notifier(
        {
            "all": HOOK,
            "core": {**HOOK, "agents": ["core-*"]},
            "approvals": {**HOOK, "events": ["approval_requested"]},
        }
    )
    found.budget("budget_warning", "core-1", "90 % spent", "2026-12-02")
    found.budget("over_budget", "edge-1", "spent", "2026-12-02")
    assert found.outbox.put_calls == [
        (["all", "core"], "budget_warning", "budget:core-1:2026-12-02"),
        (["all"], "over_budget", "budget:edge-1:2026-12-02"),
    ]


def test_a_schedule_is_failing_once_at_its_third_failure_in_a_row():
    from norfab_hermes.models import ScheduleRun

    found = notifier({"all": HOOK})
    history = []

    def recent(agent, schedule_id, limit):
        return list(reversed(history))[:limit]

    for n, status in enumerate(["ok", "failed", "failed", "failed", "failed", "ok", "failed"]):
        run = ScheduleRun(schedule_id="s1", status=status, due=f"2026-12-02T0{n}:00:00+00:00", warnings=["boom"])
        history.append(run)
        found.schedule_run("noc", run, recent)
    assert [call[1] for call in found.outbox.put_calls] == ["schedule_failing"]
    assert found.outbox.put_calls[0][2] == "schedule:noc:s1:2026-12-02T03:00:00+00:00"  # the third failure


def test_an_unavailable_agent_is_told_once_per_reason():
    found = notifier({"all": HOOK})
    found.agents({"noc": "tool show_bgp: nornir did not answer"})
    found.agents({"noc": "tool show_bgp: nornir did not answer"})
    found.agents({})
    found.agents({"noc": "tool show_bgp: nornir did not answer"})  # again after it came back
    assert [call[1] for call in found.outbox.put_calls] == ["agent_unavailable", "agent_unavailable"]
