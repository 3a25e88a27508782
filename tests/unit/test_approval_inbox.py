"""The approval inbox with a fake run and records: who may decide, and what is recorded."""

import threading
import time

import pytest

from norfab_hermes.errors import InvalidRequest, NotAllowed, UnknownApproval
from norfab_hermes.worker.approvals.inbox import ApprovalInbox
from norfab_hermes.worker.approvals.request import Ask
from norfab_hermes.worker.runs.budget import Limits
from norfab_hermes.worker.runs.request import RunRequest
from norfab_hermes.worker.runs.run import Run


class Records:
    """The worker's records as the inbox sees them, in memory."""

    def __init__(self) -> None:
        self.approvals, self.notes, self.saved = [], [], {}

    def approval(self, info, kind, actor=None):
        self.approvals.append((kind, info.state, actor))
        self.saved[info.approval_id] = info

    def approval_info(self, approval_id):
        return self.saved.get(approval_id)

    def note(self, kind, agent=None, run_id=None, actor=None, **data):
        self.notes.append((kind, actor, data))


def bounce(approvers):
    return Ask("fixer", "bounce", "nornir.cli", "any", {"FB": "r1"}, list(approvers or []), 1)


def parked(inbox, approvers, timeout=30.0):
    """A run waiting in the inbox on a thread; (run, the approval id, the thread's outcome)."""
    run = Run(
        RunRequest("fixer", "ask"), "chat", "key", Limits(seconds=60, max_turns=5), None, approval_timeout=timeout
    )
    outcome = {}
    thread = threading.Thread(
        target=lambda: outcome.update(info=inbox.request(run, bounce(approvers))),
        daemon=True,
    )
    thread.start()
    deadline = time.time() + 5
    while not run.approvals and time.time() < deadline:
        time.sleep(0.01)
    return run, run.approvals[0].request.approval_id, (thread, outcome)


def test_only_an_approver_decides_and_a_refusal_is_recorded():
    records = Records()
    inbox = ApprovalInbox("w1", records)
    run, approval_id, (thread, outcome) = parked(inbox, ["lead"])
    assert run.state == "waiting_for_approval"
    with pytest.raises(NotAllowed, match="client 'intruder' may not decide approval .*: only lead may"):
        inbox.decide(approval_id, True, "intruder", "me")
    assert records.notes == [
        ("approval.refused", "intruder", {"approval_id": approval_id, "decision": "approve", "approvers": ["lead"]})
    ]
    assert inbox.pending()[0].state == "pending"
    decided = inbox.decide(approval_id, False, "lead", "not now")
    thread.join(5)
    assert (decided.state, decided.decided_by, decided.note) == ("denied", "lead", "not now")
    assert outcome["info"] == decided and run.approval_infos() == [decided]
    assert [(kind, state) for kind, state, _ in records.approvals] == [("requested", "pending"), ("decided", "denied")]


def test_without_approvers_any_client_decides():
    inbox = ApprovalInbox("w1", Records())
    _, approval_id, (thread, _) = parked(inbox, [])
    assert inbox.decide(approval_id, True, "anyone", None).state == "approved"
    thread.join(5)


def test_an_expired_approval_is_recorded_and_cannot_be_decided_later():
    records = Records()
    inbox = ApprovalInbox("w1", records)
    run, approval_id, (thread, outcome) = parked(inbox, [], timeout=0.3)
    thread.join(5)
    assert outcome["info"].state == "expired" and outcome["info"].note == "nobody decided in time"
    assert records.approvals[-1][:2] == ("expired", "expired")
    with pytest.raises(InvalidRequest, match="is already expired"):
        inbox.decide(approval_id, True, "lead", None)


def test_an_approval_only_the_records_know_is_answered_from_them():
    """After a restart the inbox is empty: the records say how an approval ended."""
    records = Records()
    run, approval_id, (thread, _) = parked(ApprovalInbox("w1", records), [], timeout=0.2)
    thread.join(5)
    with pytest.raises(InvalidRequest, match="is already expired"):
        ApprovalInbox("w1", records).decide(approval_id, True, "lead", None)
    with pytest.raises(UnknownApproval):
        ApprovalInbox("w1", records).decide("nope", True, "lead", None)


def test_a_callers_own_answer_is_recorded_as_a_decision():
    records = Records()
    inbox = ApprovalInbox("w1", records)
    request = RunRequest("fixer", "ask", interactive=True, client="noc-desk")
    run = Run(request, "chat", "key", Limits(seconds=60, max_turns=5), None)
    inbox.answered(run, bounce([]), True)
    [info] = run.approval_infos()
    assert (info.state, info.decided_by, info.note) == ("approved", "noc-desk", "answered by the run's caller")
    assert records.approvals == [("decided", "approved", "noc-desk")]


class Channel:
    """An approval channel that keeps what it was told; ``broken`` raises on every step."""

    def __init__(self, broken=False):
        self.told, self.broken = [], broken

    def approval(self, info, kind):
        if self.broken:
            raise ConnectionError("the channel is down")
        self.told.append((kind, info.approval_id, info.state, info.decided_by))


def test_every_channel_is_told_each_step_after_the_record_and_a_broken_one_changes_nothing():
    records, channel, broken = Records(), Channel(), Channel(broken=True)
    inbox = ApprovalInbox("w1", records, channels=[broken, channel])
    run, approval_id, (thread, outcome) = parked(inbox, ["lead"])
    deadline = time.time() + 5  # the run lists its approval a moment before the channels are told
    while not channel.told and time.time() < deadline:
        time.sleep(0.01)
    assert channel.told == [("requested", approval_id, "pending", None)]
    inbox.decide(approval_id, True, "lead", "go")
    thread.join(5)
    assert outcome["info"].state == "approved", "a channel that raises never stops a decision"
    assert channel.told[1:] == [("decided", approval_id, "approved", "lead")]
    assert records.saved[approval_id].state == "approved"


def test_a_channel_is_told_when_nobody_decides_in_time():
    channel = Channel()
    inbox = ApprovalInbox("w1", Records(), channels=[channel])
    run, approval_id, (thread, outcome) = parked(inbox, ["lead"], timeout=0.3)
    thread.join(5)
    assert [(kind, state) for kind, _, state, _ in channel.told] == [("requested", "pending"), ("expired", "expired")]
