"""Notification channels of the worker inventory (``notify``): where findings and approvals are pushed."""

from typing import Annotated, Any, Dict, List, Literal, Union

from norfab.models import Result
from pydantic import Field, PositiveFloat, PositiveInt, StrictBool, StrictStr, field_validator, model_validator

from .base import StrictModel, TaskInput

# what an operator must know about, pushed as it happens
NOTIFY_EVENTS = (
    "approval_requested",
    "approval_decided",
    "approval_expired",
    "regressed",
    "recovered",
    "rolled_back",
    "outcome_unknown",
    "budget_warning",
    "over_budget",
    "schedule_failing",
    "agent_unavailable",
    "test",
)
ENV_NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"


class ChannelFields(StrictModel):
    """What every channel has: which agents and events it carries, and how fast it may send."""

    agents: List[StrictStr] = Field(["*"], description="Agent name patterns (fnmatch) whose notifications it carries")
    events: List[StrictStr] = Field(
        list(NOTIFY_EVENTS), description=f"Event kinds it carries, of: {', '.join(NOTIFY_EVENTS)}"
    )
    per_minute: PositiveInt = Field(30, description="At most this many messages a minute; the rest wait their turn")
    timeout: PositiveFloat = Field(10.0, description="Seconds one send may take before it counts as failed")
    max_attempts: PositiveInt = Field(
        50, description="Sends of one message before it goes to the dead letters (retries back off up to a minute)"
    )

    @field_validator("events")
    @classmethod
    def _events(cls, value: List[str]) -> List[str]:
        unknown = sorted(set(value) - set(NOTIFY_EVENTS))
        if unknown:
            raise ValueError(f"unknown event kinds {unknown}: use some of {list(NOTIFY_EVENTS)}")
        return value


class WebhookChannel(ChannelFields):
    """A JSON POST per message, signed with HMAC-SHA256 over the timestamp and the body."""

    type: Literal["webhook"]
    url: StrictStr = Field(..., description="Where the POST goes (http:// or https://)", pattern=r"^https?://")
    secret_env: Union[None, StrictStr] = Field(
        None,
        description="Environment variable holding the HMAC key (never the inventory); none: unsigned",
        pattern=ENV_NAME,
    )
    template: Union[None, StrictStr] = Field(
        None,
        description="A Jinja2 template of the JSON body, given the message as `m` (e.g. a Slack or Teams incoming "
        "webhook's payload, docs/notifications.md); none: the documented hermes payload",
    )


class EmailChannel(ChannelFields):
    """Plain text email over SMTP, with STARTTLS where asked."""

    type: Literal["email"]
    host: StrictStr = Field(..., description="SMTP server")
    port: PositiveInt = Field(25, description="SMTP port (587 with starttls, usually)")
    starttls: StrictBool = Field(False, description="Upgrade the connection with STARTTLS before sending")
    ca_file: Union[None, StrictStr] = Field(
        None,
        description="starttls: CA certificates (PEM) the server's certificate is checked against; none: the system's",
    )
    username_env: Union[None, StrictStr] = Field(
        None, description="Environment variable with the SMTP user name", pattern=ENV_NAME
    )
    password_env: Union[None, StrictStr] = Field(
        None, description="Environment variable with the SMTP password", pattern=ENV_NAME
    )
    sender: StrictStr = Field(..., description="From address")
    to: List[StrictStr] = Field(..., min_length=1, description="Recipient addresses")


class MatrixChannel(ChannelFields):
    """Messages in a Matrix room; approvals decided there by mapped users."""

    type: Literal["matrix"]
    homeserver: StrictStr = Field(..., description="The homeserver's base URL", pattern=r"^https?://")
    user_id: StrictStr = Field(..., description="The worker's own Matrix user, e.g. @hermes:example.org")
    token_env: StrictStr = Field(..., description="Environment variable holding its access token", pattern=ENV_NAME)
    room_id: StrictStr = Field(..., description="The room messages go to, e.g. !abc:example.org")
    operators: Dict[StrictStr, StrictStr] = Field(
        {},
        description="Matrix user id -> operator name: only these users' replies can decide approvals, and only "
        "with that operator's approver role for the agent; empty: the room is told, never asked",
    )


Channel = Annotated[Union[WebhookChannel, EmailChannel, MatrixChannel], Field(discriminator="type")]


class NotifySettings(StrictModel):
    """The worker's notification channels by name."""

    channels: Dict[StrictStr, Channel] = Field(
        {}, description="Channels by name, each with type webhook, email or matrix"
    )


class DeadLetter(StrictModel):
    """A message its channel kept refusing: set aside after max_attempts, the messages after it went on."""

    key: StrictStr = Field(..., description="What it was about, e.g. approval:<id>")
    kind: StrictStr = Field(..., description="Event kind")
    attempts: int = Field(..., description="Sends tried")
    error: Union[None, StrictStr] = Field(None, description="The last send's error")
    at: Union[None, StrictStr] = Field(None, description="ISO time it was set aside")


class ChannelStatus(StrictModel):
    type: StrictStr = Field(..., description="webhook, email or matrix")
    health: Literal["ok", "failing", "not_running"] = Field(
        ..., description="ok; failing: its last send failed (it is retried); not_running: it could not start"
    )
    error: Union[None, StrictStr] = Field(None, description="Why it fails or does not run")
    last_sent: Union[None, StrictStr] = Field(None, description="ISO time of its last delivered message")
    waiting: int = Field(0, description="Messages in its outbox")
    sent: int = Field(0, description="Messages delivered (kept a week)")
    dead: int = Field(0, description="Dead letters")
    dead_letters: List[DeadLetter] = Field([], description="The newest dead letters")


class NotifyInput(TaskInput):
    action: Literal["status", "test"] = Field("status", description="status: each channel; test: send a test message")
    channel: Union[None, StrictStr] = Field(None, description="test: the channel to send to")
    timeout: PositiveFloat = Field(15.0, description="test: seconds to wait for the channel to take it")
    text: Union[None, StrictStr] = Field(None, max_length=500, description="test: a line the test message carries")

    @model_validator(mode="after")
    def _channel_for_test(self) -> "NotifyInput":
        if self.action == "test" and not self.channel:
            raise ValueError("channel: action test needs the channel's name, e.g. channel='noc-webhook'")
        return self


class NotifyResultData(StrictModel):
    worker: StrictStr = Field(..., description="Worker name")
    channels: Dict[StrictStr, ChannelStatus] = Field({}, description="Each channel's health and outbox")
    test: Union[None, Dict[StrictStr, Any]] = Field(
        None, description="test: the channel, state (sent, dead, waiting: not taken in time, not_running) and error"
    )


class NotifyResult(Result):
    result: Union[None, NotifyResultData] = Field(None, description="The channels, and the test message's fate")
