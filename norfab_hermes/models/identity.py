"""
Operators and their proofs: who may ask a hermes worker for what, and the
claim an operator's SSH key signs for one request (``norfab_hermes.identity``).
"""

from typing import Dict, List, Literal, Union

from pydantic import Field, StrictFloat, StrictInt, StrictStr, field_validator

from .base import StrictModel

Role = Literal["viewer", "operator", "approver", "admin"]
KEY_TYPES = ("ssh-ed25519", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp521", "ssh-rsa")


def public_key_line(line: str) -> str:
    """An OpenSSH public key line from itself or from an allowed_signers line (principal and options first)."""
    parts = line.split()
    for index, part in enumerate(parts):
        if part in KEY_TYPES and index + 1 < len(parts):
            return " ".join(parts[index : index + 2])
    raise ValueError(
        f"'{line[:60]}' holds no SSH public key: give the line of the key's .pub file "
        f"(types: {', '.join(KEY_TYPES)}) or an allowed_signers line"
    )


class OperatorDefinition(StrictModel):
    """One operator: the SSH keys that sign for them and their roles per agent name pattern."""

    keys: List[StrictStr] = Field(
        ..., min_length=1, description="OpenSSH public keys (a .pub line or an allowed_signers line), one or more"
    )
    roles: Dict[StrictStr, List[Role]] = Field(
        ...,
        description="Roles by agent name pattern (fnmatch), e.g. {'*': [viewer], 'core-*': [operator, approver]}; "
        "viewer reads, operator runs agents, approver decides changes, admin manages agents, schedules and memory",
    )

    @field_validator("keys")
    @classmethod
    def _keys(cls, value: List[str]) -> List[str]:
        return [public_key_line(line) for line in value]


class ProofClaim(StrictModel):
    """What an operator's key signs for one request: the request itself, who sends it, and for how long."""

    v: Literal[1] = Field(1, description="Claim format version")
    task: StrictStr = Field(..., description="hermes task")
    workers: List[StrictStr] = Field(..., min_length=1, description="Workers the job is sent to")
    agent: Union[None, StrictStr] = Field(None, description="The task's agent argument, when it has one")
    args: StrictStr = Field(..., description="sha256 of the task's arguments, canonical JSON, without the proof")
    client: StrictStr = Field(..., description="NorFab client name that sends the job")
    issued: Union[StrictInt, StrictFloat] = Field(..., description="Unix time the proof was made")
    expires: Union[StrictInt, StrictFloat] = Field(..., description="Unix time after which it is refused")
    nonce: StrictStr = Field(..., min_length=16, description="Random; a worker accepts it once")
    subject: Union[None, StrictStr] = Field(
        None, description="approve and deny: the change digest (or arguments digest) of the approval decided"
    )
    grant: Union[None, StrictStr] = Field(
        None, description="A console's request: the operator's grant for the session key that signs it"
    )


class GrantClaim(StrictModel):
    """What an operator's key signs to let a console act for them: the console session's key, for a while."""

    v: Literal[1] = Field(1, description="Grant format version")
    purpose: Literal["console-session"] = Field("console-session", description="What the grant is for")
    operator: StrictStr = Field(..., description="The operator who signs in: the key must be one of theirs")
    key: StrictStr = Field(..., description="Fingerprint of the session key the console signs requests with")
    console: StrictStr = Field(..., description="The console the operator signed in to (its address), for the audit")
    issued: Union[StrictInt, StrictFloat] = Field(..., description="Unix time the grant was made")
    expires: Union[StrictInt, StrictFloat] = Field(
        ..., description="Unix time after which requests under it are refused"
    )
    nonce: StrictStr = Field(..., min_length=16, description="Random: two grants never sign the same text")
