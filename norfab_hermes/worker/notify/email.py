"""
The email channel: plain text over SMTP, one message per notification, with
STARTTLS and a login where the channel asks for them (credentials only from
the environment). Messages of one key (one approval) share a thread: the
first one's Message-ID is every later one's In-Reply-To.
"""

import os
import smtplib
import ssl
from email.message import EmailMessage
from email.utils import formatdate
from typing import Optional

from ...errors import InventoryError
from ...models import EmailChannel
from .channel import Message

SUBJECT_MAX = 120


def message_id(key: str, worker: str) -> str:
    safe = "".join(char if char.isalnum() or char in "-." else "-" for char in key)
    return f"<{safe}@{worker}.hermes>"


class EmailTransport:
    updates_in_place = False

    def __init__(self, name: str, definition: EmailChannel) -> None:
        self.name, self.definition = name, definition
        self.username = self._env(definition.username_env, "username_env")
        self.password = self._env(definition.password_env, "password_env")

    def _env(self, variable: Optional[str], field: str) -> Optional[str]:
        value = os.environ.get(variable) if variable else None
        if variable and not value:
            raise InventoryError(f"notify.channels.{self.name}.{field}: environment variable {variable} is not set")
        return value

    def send(self, message: Message) -> Optional[str]:
        mail = EmailMessage()
        mail["From"] = self.definition.sender
        mail["To"] = ", ".join(self.definition.to)
        subject = f"[hermes] {message.agent}: {message.summary}"
        mail["Subject"] = " ".join(subject.split())[:SUBJECT_MAX]  # one line: no header injection from a summary
        mail["Date"] = formatdate(localtime=False)
        thread = message_id(message.key, message.worker)
        if message.kind == "approval_requested":
            mail["Message-ID"] = thread
        elif message.key.startswith("approval:"):  # the decision, in the request's thread
            mail["In-Reply-To"] = mail["References"] = thread
        mail["X-Hermes-Message-Id"] = message.id
        mail.set_content(message.text())
        with smtplib.SMTP(self.definition.host, self.definition.port, timeout=self.definition.timeout) as smtp:
            if self.definition.starttls:  # the server's certificate and name are checked
                smtp.starttls(context=ssl.create_default_context(cafile=self.definition.ca_file))
            if self.username:
                smtp.login(self.username, self.password or "")
            smtp.send_message(mail)
        return None

    def update(self, reference: str, message: Message) -> None:
        raise NotImplementedError("an email cannot be updated once sent")

    def close(self) -> None:
        pass
