"""
Which way a call's approval is asked: the run's caller inline, the inbox
for a run nobody is attached to (or when the caller may not decide: four
eyes, several approvers, not among the approvers), or a refusal when
neither can be asked. A change is always asked; a read-only tool never.
"""

from typing import Any, Dict, Optional

from . import deciders
from .inbox import ApprovalInbox
from .inline import AskOperator, InlinePrompt
from .request import Ask, AskingRun, ChangeAsk, Verdict


class Approver:
    """Asks for the approval of the tool calls that need it, for the agents of one worker."""

    def __init__(self, ask: Optional[AskOperator] = None, inbox: Optional[ApprovalInbox] = None) -> None:
        self.inline = InlinePrompt(ask, inbox) if ask is not None else None
        self.inbox = inbox

    def approve(
        self, spec: Any, arguments: Dict[str, Any], run: AskingRun, change: Optional[ChangeAsk] = None
    ) -> Verdict:
        """Who approved the call (none for a call that needs no approval), or why it may not run."""
        if change is None and not spec.changes:
            return Verdict()
        if self.inline is None and self.inbox is None:
            return Verdict(refusal="this tool needs the operator's approval, and nobody can be asked in this run")
        service, task, workers = spec.where()
        approvers = spec.definition.approvers if spec.definition.approvers is not None else run.approvers
        required = spec.definition.approvals_required or run.approvals_required
        ask = Ask(spec.agent, spec.name, f"{service}.{task}", workers, arguments, list(approvers), required, change)
        unattended = "scheduled" if run.schedule_id else "delegated" if run.lineage else None
        if unattended and not run.interactive and not approvers:
            return Verdict(
                refusal=f"a {unattended} run reaches a change only through the approval inbox with a named approver, "
                f"and agent '{spec.agent}' names none (approvers); the call was not made"
            )
        # a caller who is not among the approvers answers nothing inline: the call waits in the inbox; with
        # operators (four eyes) or several approvers the caller never approves its own call
        signed = self.inbox is not None and deciders.signed(self.inbox.identity)
        inline = run.interactive and (not approvers or run.client in approvers) and required == 1 and not signed
        if not inline and run.approval_timeout > 0 and self.inbox is not None:
            return self.inbox.ask(run, ask)
        if run.interactive and not inline and (signed or required > 1):
            return Verdict(
                refusal="this tool needs the approval of another operator than the run's caller (four eyes or "
                "approvals_required), and the agent sets no approval_timeout to wait for it; the call was not made"
            )
        if run.interactive and not inline:
            return Verdict(
                refusal=f"this tool needs the approval of {', '.join(approvers)}; the run's caller is not one of them "
                "and the agent sets no approval_timeout to wait for them; the call was not made"
            )
        if self.inline is None:
            return Verdict(
                refusal="this tool needs the operator's approval: nobody can be asked here; the call was not made"
            )
        return self.inline.ask(run, ask)
