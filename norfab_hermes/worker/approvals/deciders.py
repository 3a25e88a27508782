"""
Who may decide an approval: the one place that says it.

Without operators, a client among the approval's ``approvers`` (any client
when it names none). With operators (identity on), the decision's proof must
sign this approval's digest, the operator must hold role approver for the
agent, and may not approve a run it started (four eyes); an approval that
needs several approvers takes each one once.
"""

from typing import Any, List, Optional

from ...models import ApprovalInfo
from ...safety.approvers import approver_refusal


def refusal(
    identity: Any,
    request: ApprovalInfo,
    approved_by: List[str],
    approve: bool,
    by: Optional[str],
    subject: Optional[str],
) -> Optional[str]:
    """Why ``by`` may not decide ``request`` now (``approved_by``: its approvals so far), or None."""
    what = f"decide approval '{request.approval_id}'"
    found = approver_refusal(request.approvers, by, what, request.agent)
    if found is None and signed(identity):
        found = _identity_refusal(identity, request, approve, by, subject, what)
    if found is None and approve and by in approved_by:
        found = f"'{by}' approved '{request.approval_id}' already: it needs {request.approvals_required} different approvers"
    return found


def signed(identity: Any) -> bool:
    """Whether the worker has operators (every decision is an operator's, checked by its proof)."""
    return identity is not None and identity.enabled


def _identity_refusal(
    identity: Any, request: ApprovalInfo, approve: bool, by: Optional[str], subject: Optional[str], what: str
) -> Optional[str]:
    expected = expected_subject(request)
    if subject != expected:
        return (
            f"the proof of this decision signs digest '{subject}', not approval '{request.approval_id}''s "
            f"'{expected}': sign the decision for the change get_approvals shows"
        )
    found: Optional[str] = identity.refusal(by, "approver", request.agent, what)
    if found is None and approve and by == request.requested_by:
        found = (
            f"operator '{by}' started run {request.run_id} and may not approve its own change (four eyes): "
            "another approver must"
        )
    return found


def expected_subject(request: ApprovalInfo) -> str:
    """What a decision's proof signs: the change digest of a change, else the arguments digest."""
    return request.change_digest or request.arguments_digest


def may_decide(identity: Any, request: ApprovalInfo, approved_by: List[str], pending: bool) -> List[str]:
    """Operators who may still decide an approval (with operators, while it is pending; else empty)."""
    if not signed(identity) or not pending:
        return []
    done = {request.requested_by, *approved_by}
    return sorted(
        name
        for name in identity.operators
        if name not in done
        and (not request.approvers or name in request.approvers)
        and identity.refusal(name, "approver", request.agent, "decide") is None
    )
