"""
A tool call's approval: the run's operator answers inline, a run nobody is attached to waits in the
approval inbox, or the call is refused. A change is shown with its devices, preview and digest.
"""

import json
from typing import Any, Callable, Dict, Optional

from .calls import ChangeAsk, ToolError


class Approver:
    """Asks for the approval of the tool calls that need it, for the agents of one worker."""

    def __init__(self, ask: Optional[Callable[..., Any]] = None, inbox: Any = None) -> None:
        self.ask = ask  # ask(session_key, question, default, metadata): the run's operator answers, or PermissionError
        self.inbox = inbox  # the approval inbox of runs nobody is attached to

    def approve(
        self, spec: Any, arguments: Dict[str, Any], run: Any, change: Optional[ChangeAsk] = None
    ) -> Optional[str]:
        """A live caller answers inline; a run nobody is attached to waits in the inbox, or is refused.

        A change is shown with its devices, preview and digest, and is
        always asked; a read-only tool is never asked.
        Returns who approved the call (None for a call that needs no approval).
        """
        if change is None and not spec.changes:
            return None
        if self.ask is None and self.inbox is None:
            raise ToolError("this tool needs the operator's approval, and nobody can be asked in this run")
        service, task, workers = spec.where()
        target = f"{service}.{task} on {workers}"
        approvers = spec.definition.approvers if spec.definition.approvers is not None else run.approvers
        unattended = "scheduled" if run.schedule_id else "delegated" if run.lineage else None
        if unattended and not run.interactive and not approvers:
            raise ToolError(
                f"a {unattended} run reaches a change only through the approval inbox with a named approver, and "
                f"agent '{spec.agent}' names none (approvers); the call was not made"
            )
        required = spec.definition.approvals_required or run.approvals_required
        # a caller who is not among the approvers answers nothing inline: the call waits in the inbox; with
        # operators (four eyes) or several approvers the caller never approves its own call
        signed = self.inbox is not None and getattr(self.inbox.identity, "enabled", False)
        inline = run.interactive and (not approvers or run.client in approvers) and required == 1 and not signed
        if not inline and run.approval_timeout > 0 and self.inbox is not None:
            approval = self.inbox.request(run, spec.name, target, arguments, approvers, change, required)
            note = f" ({approval.note})" if approval.note else ""
            if approval.state == "approved":
                return approval.decided_by or "an operator"
            if approval.state == "denied":
                raise ToolError(f"{approval.decided_by or 'an operator'} denied this call{note}; it was not made")
            raise ToolError(
                f"this tool needs the operator's approval: approval {approval.approval_id} expired{note}; the call was not made"
            )
        if run.interactive and not inline and (signed or required > 1):
            raise ToolError(
                "this tool needs the approval of another operator than the run's caller (four eyes or "
                "approvals_required), and the agent sets no approval_timeout to wait for it; the call was not made"
            )
        if run.interactive and not inline:
            raise ToolError(
                f"this tool needs the approval of {', '.join(approvers)}; the run's caller is not one of them "
                "and the agent sets no approval_timeout to wait for them; the call was not made"
            )
        what = change.what if change else "run tool"
        question = (
            f"Agent '{spec.agent}' wants to {what} {spec.name} ({service}.{task}) "
            f"with {json.dumps(arguments, sort_keys=True)}. Allow?"
        )
        metadata = {"approval": {"tool": spec.name, "arguments": arguments}}
        if change:
            question = f"{change.shown()}\n{question}"
            metadata["approval"].update(digest=change.digest, devices=change.devices, preview=change.preview)
        if self.ask is None:
            raise ToolError("this tool needs the operator's approval: nobody can be asked here; the call was not made")
        try:
            allowed = self.ask(run.session_key, question, False, metadata)
        except PermissionError as reason:
            raise ToolError(f"this tool needs the operator's approval: {reason}; the call was not made") from None
        approved = allowed is True or str(allowed).lower() in ("y", "yes", "true")
        if self.inbox is not None:
            self.inbox.answered(run, spec.name, target, arguments, approved, approvers, change)
        if not approved:
            raise ToolError("the operator declined this call; it was not made")
        return run.client or "the run's operator"
