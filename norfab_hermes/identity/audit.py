"""
The operator's signature kept in an audit entry, checked again: the claim
still verifies under the signature, the signing key is the fingerprint the
entry names, and (when the operators' keys are given) that key belongs to the
operator the entry names. Used by ``verify_audit`` on the worker and offline
on an exported log (``python -m norfab_hermes.identity verify-audit``).
"""

from typing import Any, Dict, Optional

from .signatures import SignatureError, fingerprint, verify


def signature_problem(seq: int, data: Dict[str, Any], keys: Optional[Dict[str, str]] = None) -> Optional[str]:
    """Why entry ``seq``'s kept signature does not prove its operator, or None (also for an unsigned entry).

    Args:
        seq: the entry's sequence number, for the message.
        data: the entry's data; a signed request's entry holds ``signed``.
        keys: key fingerprint to operator name; None checks the signature alone.
    """
    signed = data.get("signed")
    if signed is None:
        return None
    try:
        blob = verify(str(signed["claim"]).encode(), str(signed["signature"]))
    except (SignatureError, KeyError, TypeError) as error:
        return f"entry {seq}: the operator's signature does not verify ({error})"
    key = fingerprint(blob)
    if key != signed.get("fingerprint"):
        return f"entry {seq}: signed by key {key}, not the {signed.get('fingerprint')} it names"
    if keys is not None and keys.get(key) != signed.get("operator"):
        owner = keys.get(key)
        held = f"operator '{owner}'" if owner else "no operator"
        return f"entry {seq}: names operator '{signed.get('operator')}' but its key {key} belongs to {held}"
    return None
