"""
Asking the run's own caller, at the terminal it runs from (the NorFab input
request of an interactive invoke or chat): the question shows the change,
device text indented and marked; the answer is recorded like an inbox decision.
"""

import json
from typing import Any, Callable, Dict, Optional

from .inbox import ApprovalInbox
from .request import Ask, AskingRun, Verdict

# ask(session_key, question, default, metadata): the run's operator's answer, or PermissionError
AskOperator = Callable[[str, str, Any, Dict[str, Any]], Any]


class InlinePrompt:
    """The ``AskChannel`` of a run whose caller is attached."""

    def __init__(self, ask: AskOperator, inbox: Optional[ApprovalInbox]) -> None:
        self._ask = ask
        self.inbox = inbox  # records the answer with the other approvals

    def ask(self, run: AskingRun, ask: Ask) -> Verdict:
        change = ask.change
        what = change.what if change else "run tool"
        question = (
            f"Agent '{ask.agent}' wants to {what} {ask.tool} ({ask.task}) "
            f"with {json.dumps(ask.arguments, sort_keys=True)}. Allow?"
        )
        metadata: Dict[str, Any] = {"approval": {"tool": ask.tool, "arguments": ask.arguments}}
        if change:
            question = f"{change.shown()}\n{question}"
            metadata["approval"].update(digest=change.digest, devices=change.devices, preview=change.preview)
        try:
            allowed = self._ask(run.session_key, question, False, metadata)
        except PermissionError as reason:
            return Verdict(refusal=f"this tool needs the operator's approval: {reason}; the call was not made")
        approved = allowed is True or str(allowed).lower() in ("y", "yes", "true")
        if self.inbox is not None:
            self.inbox.answered(run, ask, approved)
        if not approved:
            return Verdict(refusal="the operator declined this call; it was not made")
        return Verdict(approved_by=run.client or "the run's operator")
