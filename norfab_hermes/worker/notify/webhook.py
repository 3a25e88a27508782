"""
The webhook channel: one JSON POST per message, signed.

The body is the message's fields as JSON (docs/notifications.md), or what the
channel's Jinja2 ``template`` makes of them (a Slack or Teams incoming
webhook's payload). With ``secret_env`` every POST carries
``X-Hermes-Timestamp`` (Unix seconds) and ``X-Hermes-Signature:
sha256=<hex>``, the HMAC-SHA256 of ``<timestamp>.<body>`` with that secret,
and ``X-Hermes-Message-Id``: a receiver checks the signature, refuses an old
timestamp, and drops an id it has seen (a retried send may arrive twice).
"""

import hashlib
import hmac
import json
import os
import time
import urllib.request
from dataclasses import asdict
from typing import Any, Dict, Optional

from jinja2.sandbox import SandboxedEnvironment

from ...errors import InventoryError
from ...models import WebhookChannel
from .channel import Message

REPLAY_WINDOW = 300  # seconds a receiver should accept a timestamp for (verify's default)


def signature(secret: str, timestamp: str, body: bytes) -> str:
    """The X-Hermes-Signature value of a body sent at ``timestamp``."""
    digest = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()
    return f"sha256={digest}"


def verify(secret: str, timestamp: str, body: bytes, sent: str, now: Optional[float] = None) -> bool:
    """What a receiver checks: the signature, and a timestamp within the replay window."""
    fresh = abs((now or time.time()) - float(timestamp)) <= REPLAY_WINDOW
    return fresh and hmac.compare_digest(signature(secret, timestamp, body), sent)


class WebhookTransport:
    updates_in_place = False  # a webhook cannot edit what it posted: a decision is a message of its own

    def __init__(self, name: str, definition: WebhookChannel) -> None:
        self.name, self.definition = name, definition
        self.secret = os.environ.get(definition.secret_env) if definition.secret_env else None
        if definition.secret_env and not self.secret:
            raise InventoryError(
                f"notify.channels.{name}.secret_env: environment variable {definition.secret_env} is not set: "
                "set it to the webhook's HMAC key, or remove secret_env to send unsigned"
            )
        self.template = SandboxedEnvironment(autoescape=False).from_string(definition.template or "{{ m | tojson }}")
        self.body(Message("check", "test", "check", "agent", "worker", "summary", "reference", "time"))

    def body(self, message: Message) -> bytes:
        """The POST body: the template's JSON (checked at start: a template that makes no JSON is refused)."""
        fields: Dict[str, Any] = {**asdict(message), "text": message.text()}
        rendered = self.template.render(m=fields)
        try:
            json.loads(rendered)
        except ValueError as error:
            raise InventoryError(
                f"notify.channels.{self.name}.template: does not render JSON ({error}): use the tojson filter for "
                'every value, e.g. {"text": {{ m.text | tojson }}}'
            ) from None
        return rendered.encode()

    def send(self, message: Message) -> Optional[str]:
        body = self.body(message)
        headers = {"Content-Type": "application/json", "X-Hermes-Message-Id": message.id}
        if self.secret:
            timestamp = str(int(time.time()))
            headers.update(
                {"X-Hermes-Timestamp": timestamp, "X-Hermes-Signature": signature(self.secret, timestamp, body)}
            )
        request = urllib.request.Request(self.definition.url, data=body, headers=headers, method="POST")
        with urllib.request.urlopen(request, timeout=self.definition.timeout) as response:  # raises on 4xx/5xx
            response.read()
        return None

    def update(self, reference: str, message: Message) -> None:
        raise NotImplementedError("a webhook cannot update what it sent")

    def close(self) -> None:
        pass
