"""
The worker's door: a request's proof checked against the operators of the
worker's inventory. Pure logic (no NorFab, no Hermes): the worker calls
``check`` before a task runs and refuses the task with the reason it raises.
"""

import logging
import threading
import time
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Callable, Dict, Optional, Tuple

from ..models import OperatorDefinition
from . import grant as grants
from . import proof as proofs
from .roles import UNSIGNED, holds, role_of
from .signatures import SignatureError, fingerprint, key_blob, verify

CLOCK_SKEW = 30.0  # seconds a client's clock may run ahead of the worker's
REPLAYED = "proof: this proof was used already (replayed); sign each request anew"

log = logging.getLogger(__name__)


class ProofRefused(Exception):
    """Why a request is refused; ``operator`` and ``fingerprint`` when the signature itself was good."""

    def __init__(self, reason: str, operator: Optional[str] = None, key: Optional[str] = None) -> None:
        super().__init__(reason)
        self.operator = operator
        self.fingerprint = key


@dataclass(frozen=True)
class Verified:
    """A request whose proof held: who signed it, with which key, and what exactly they signed."""

    operator: str
    fingerprint: str
    signature: str
    claim: str  # the signed message, for the audit log to re-check
    subject: Optional[str]

    def audit(self) -> Dict[str, str]:
        return {
            "operator": self.operator,
            "fingerprint": self.fingerprint,
            "claim": self.claim,
            "signature": self.signature,
        }


# the verified request the current task (and the runs it starts, in copied contexts) acts for
SIGNED: "ContextVar[Optional[Verified]]" = ContextVar("hermes_signed_request", default=None)


class IdentityGate:
    """Operators of one worker, their keys and roles, and the nonces it has seen."""

    def __init__(self, worker: str, operators: Dict[str, OperatorDefinition]) -> None:
        self.worker = worker
        self._lock = threading.Lock()
        self._nonces: Dict[str, float] = {}
        # the worker's records, where nonces outlive a restart (and meet the fleet's): (nonce, job, expires, now)
        # -> why the nonce was taken already, or None; without it they live in memory only
        self.nonces: Optional[Callable[[str, str, float, float], Optional[str]]] = None
        self.closed: Optional[str] = None  # why every request is refused: operators named but unreadable
        self.load(operators)

    def load(self, operators: Dict[str, OperatorDefinition]) -> None:
        """Take the operators as they are now; a key that is gone is refused from the next request on."""
        keys: Dict[bytes, str] = {}
        for name, operator in operators.items():
            for line in operator.keys:
                keys[key_blob(line)] = name
        with self._lock:
            self.operators, self._keys, self.closed = dict(operators), keys, None

    def close(self, reason: str) -> None:
        """Refuse every request: the inventory names operators the worker could not read (fail closed)."""
        self.closed = reason

    @property
    def enabled(self) -> bool:
        return bool(self.operators) or self.closed is not None

    def public_keys(self) -> Dict[str, str]:
        """Fingerprint to operator, for a check of audit entries."""
        return {fingerprint(blob): name for blob, name in self._keys.items()}

    def check(
        self,
        task: str,
        kwargs: Dict[str, Any],
        client: Optional[str],
        proof: Optional[str],
        now: Optional[float] = None,
        job: str = "",
    ) -> Optional[Verified]:
        """The verified operator of a request, None when identity is off or the task is unsigned; else ProofRefused.

        ``job`` is the NorFab job's UUID: one job sent to several workers carries one proof.
        """
        if not self.enabled or task in UNSIGNED:
            return None
        if self.closed is not None:
            raise ProofRefused(self.closed)
        if not proof:
            raise ProofRefused(
                f"{task} needs a proof: worker '{self.worker}' only takes requests signed by an operator's SSH key; "
                "sign with the nf# shell or the Python client (identity configured), or pass proof= "
                "(mint one with python -m norfab_hermes.identity)"
            )
        try:
            claim, message, signature = proofs.parse(proof)
            blob = verify(message, signature)
        except SignatureError as error:
            raise ProofRefused(f"proof: {error}") from None
        key = fingerprint(blob)
        now = time.time() if now is None else now
        operator = self._keys.get(blob)
        if operator is None and claim.grant is not None:
            operator, key = self._granted(claim.grant, blob, now)
        if operator is None:
            raise ProofRefused(
                f"proof: signed by key {key}, which no operator of worker '{self.worker}' holds", key=key
            )
        problem = self._claim_problem(claim, task, kwargs, client, now)
        if problem is None:
            problem = self._role_problem(operator, task, kwargs.get("agent"))
        if problem is None:
            problem = self._first_use(claim.nonce, claim.expires, now, job)
        if problem:
            raise ProofRefused(problem, operator, key)
        return Verified(operator, key, signature, message.decode(), claim.subject)

    def _granted(self, grant: str, signing_blob: bytes, now: float) -> Tuple[str, str]:
        """(operator, their key's fingerprint) whose console grant vouches for the session key that signed."""
        try:
            named, blob = grants.granting_key(grant, signing_blob, now)
        except SignatureError as error:
            raise ProofRefused(f"grant: {error}", key=fingerprint(signing_blob)) from None
        key = fingerprint(blob)
        operator = self._keys.get(blob)
        if operator is None:
            raise ProofRefused(f"grant: made by key {key}, which no operator of worker '{self.worker}' holds", key=key)
        if operator != named:
            raise ProofRefused(f"grant: it names operator '{named}', but key {key} is operator '{operator}''s", key=key)
        return operator, key

    def _claim_problem(
        self, claim: Any, task: str, kwargs: Dict[str, Any], client: Optional[str], now: float
    ) -> Optional[str]:
        checks: Tuple[Tuple[bool, str], ...] = (
            (claim.task != task, f"proof: it is for task '{claim.task}', not '{task}'"),
            (
                self.worker not in claim.workers,
                f"proof: it is for workers {', '.join(claim.workers)}, not '{self.worker}'",
            ),
            (
                claim.agent != kwargs.get("agent"),
                f"proof: it is for agent '{claim.agent}', not '{kwargs.get('agent')}'",
            ),
            (claim.args != proofs.arguments_digest(kwargs), "proof: it was signed for other arguments than these"),
            (claim.client != client, f"proof: it is for NorFab client '{claim.client}', not '{client}'"),
            (
                claim.expires - claim.issued > proofs.MAX_LIFETIME,
                f"proof: valid for more than {proofs.MAX_LIFETIME:.0f}s",
            ),
            (claim.issued > now + CLOCK_SKEW, "proof: issued in the future; check the client's clock"),
            (claim.expires <= now, f"proof: expired {now - claim.expires:.0f}s ago; sign the request again"),
        )
        return next((text for failed, text in checks if failed), None)

    def _role_problem(self, operator: str, task: str, agent: Optional[str]) -> Optional[str]:
        role = role_of(task)
        if holds(self.operators[operator].roles, role, agent):
            return None
        where = f"agent '{agent}'" if agent else "any agent"
        return f"operator '{operator}' may not {task}: it needs role {role} for {where} (operators.{operator}.roles)"

    def refusal(self, operator: Optional[str], role: str, agent: str, what: str) -> Optional[str]:
        """Why ``operator`` may not do ``what`` for ``agent`` (a decision, once its agent is known), or None."""
        if not self.enabled:
            return None
        if operator is None or operator not in self.operators:
            return f"'{operator}' may not {what}: no operator of worker '{self.worker}' by that name"
        if holds(self.operators[operator].roles, role, agent):
            return None
        return f"operator '{operator}' may not {what}: it needs role {role} for agent '{agent}' (operators.{operator}.roles)"

    def _first_use(self, nonce: str, expires: float, now: float, job: str) -> Optional[str]:
        """Why the nonce may not be taken (replayed), or None: this worker's memory, then its records."""
        with self._lock:
            for old in [n for n, until in self._nonces.items() if until <= now]:
                del self._nonces[old]
            if nonce in self._nonces:
                return REPLAYED
            self._nonces[nonce] = expires
        if self.nonces is None:
            return None
        try:
            return self.nonces(nonce, job, expires, now)
        except Exception as error:  # a nonce that cannot be recorded could be replayed: refuse (fail closed)
            log.error(f"{self.worker} - Could not record a proof's nonce: {error!r}")
            return (
                f"proof: worker '{self.worker}' could not record the proof's nonce ({type(error).__name__}); try again"
            )
