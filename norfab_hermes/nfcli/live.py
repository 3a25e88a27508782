"""
One agent turn from the ``nf#`` shell, live: job events as they arrive,
operator questions answered at the terminal, Ctrl+C interrupts the run.

Used by ``hermes invoke`` and by each line of ``hermes chat``. NorFab's own
``run_future_job`` cannot interrupt a run: it does not hand back the run id
from the first event, and a Ctrl+C while it waits shuts NorFab down (see
:class:`CtrlC`). So this module submits the job itself and reuses NorFab's
``collect_input_request`` for questions and approvals.
"""

import os
import re
import select
import signal
import sys
import threading
from contextlib import contextmanager
from typing import Any, Callable, Dict, Iterator, List, NamedTuple, Optional

from norfab.clients.nfcli_shell.common import collect_input_request
from rich.console import Console, Group, RenderableType
from rich.markdown import Markdown
from rich.markup import escape
from rich.text import Text

from ..models import InvokeResultData
from ..norfab_compat import client_job_errors
from ..routing import SERVICE, Router, RoutingError, Target, invoke_job_timeout

POLL = 0.1  # seconds between checks for a Ctrl+C key while a job runs
CTRL_C = b"\x03"


class CtrlC:
    """
    Ctrl+C while a hermes command runs, without stopping NorFab.

    NorFab's SIGINT handler shuts NorFab down, and the broker and workers nfcli
    starts locally inherit it and share the terminal's process group, so a
    terminal Ctrl+C would stop them all. On a terminal, Ctrl+C is therefore
    read as a key (the tty's ISIG is off; keys typed meanwhile are dropped) and
    reported by :meth:`pressed`. A SIGINT that still reaches nfcli (no
    terminal, ``kill -INT``) raises KeyboardInterrupt instead. Nests safely.
    """

    def __enter__(self) -> "CtrlC":
        self.handler = None
        if threading.current_thread() is threading.main_thread():
            self.handler = signal.getsignal(signal.SIGINT)
            signal.signal(signal.SIGINT, signal.default_int_handler)
        try:
            import termios  # POSIX terminals only; elsewhere Ctrl+C stays a signal

            self.termios: Any = termios
            self.fd: Optional[int] = sys.stdin.fileno() if sys.stdin and sys.stdin.isatty() else None
        except (ImportError, AttributeError, OSError, ValueError):  # no termios, or stdin replaced (pytest)
            self.fd = None
        if self.fd is not None:
            self.saved = self.termios.tcgetattr(self.fd)
            self._mode(keys=True)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.fd is not None:
            self.termios.tcsetattr(self.fd, self.termios.TCSANOW, self.saved)
        if self.handler is not None:
            signal.signal(signal.SIGINT, self.handler)

    def _mode(self, keys: bool) -> None:
        termios = self.termios
        attrs = list(self.saved)
        attrs[3] = (attrs[3] & ~(termios.ICANON | termios.ECHO)) if keys else (attrs[3] | termios.ICANON | termios.ECHO)
        attrs[3] &= ~termios.ISIG
        termios.tcsetattr(self.fd, termios.TCSANOW, attrs)

    def pressed(self) -> bool:
        """True if Ctrl+C was typed since the last call."""
        hit = False
        while self.fd is not None and select.select([self.fd], [], [], 0)[0]:
            data = os.read(self.fd, 1024)
            hit = hit or CTRL_C in data
            if not data:
                break
        return hit

    @contextmanager
    def typing(self) -> Iterator[None]:
        """Line input with echo for an operator's answer; Ctrl+C stays a plain key."""
        if self.fd is not None:
            self._mode(keys=False)
        try:
            yield
        finally:
            if self.fd is not None:
                self._mode(keys=True)


class ReplyStream:
    """The reply as the agent writes it, printed as it arrives; ``text`` is the message written last."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.segment: Any = None
        self.text = ""
        self.open = False

    def add(self, reply: Dict[str, Any]) -> None:
        delta = str(reply.get("delta") or "")
        if reply.get("segment") != self.segment or reply.get("replace"):
            self.end()  # a new message of the agent (after tool calls), or its text rewritten
            self.segment, self.text = reply.get("segment"), ""
        self.text += delta
        self.console.print(Text(delta, style="cyan"), end="")
        self.open = True

    def end(self) -> None:
        """Close the streamed line before anything else is printed."""
        if self.open:
            self.console.print()
            self.open = False


class Turn(NamedTuple):
    """A finished turn: the worker's Result dict and the reply text already streamed to the terminal."""

    result: dict
    streamed: str


def run_turn(
    router: Router,
    target: Target,
    instructions: str,
    session_id: Optional[str],
    timeout: Optional[float],
    show_event: Callable[[dict], None],
    console: Console,
    case_id: Optional[str] = None,
) -> Optional[Turn]:
    """
    Run one interactive invoke on ``target``: the worker's Result and the reply streamed meanwhile.

    The first Ctrl+C asks the worker to interrupt the run (as soon as its run
    id is known) and keeps waiting for the partial reply; a second Ctrl+C
    stops waiting and returns None, leaving the run to finish on the worker.
    """
    kwargs: Dict[str, Any] = {
        "agent": target.agent,
        "instructions": instructions,
        "session_id": session_id,
        "interactive": True,
    }
    if timeout:
        kwargs["run_timeout"] = timeout
    if case_id:
        kwargs["case_id"] = case_id
    with CtrlC() as ctrl_c:
        future = router.client.submit_job(
            SERVICE,
            "invoke",
            kwargs=router.signed("invoke", [target.worker], kwargs),
            workers=target.worker,
            timeout=invoke_job_timeout(timeout),
        )
        run_id, interrupting, question = None, False, None
        stream = ReplyStream(console)
        while True:
            try:
                # events() ends with the job, or after POLL seconds without events
                for event in future.events(timeout=POLL):
                    extras = event.get("extras") or {}
                    if extras.get("reply"):
                        stream.add(extras["reply"])
                        continue
                    stream.end()
                    if not run_id and extras.get("run_id"):
                        run_id = extras["run_id"]
                        if interrupting:
                            _interrupt(router, target, run_id, console)
                    if event.get("event_type") == "input_request" and extras.get("input_request"):
                        question = extras["input_request"]
                        with ctrl_c.typing():
                            collect_input_request(future, as_text(event), console)
                        question = None
                    show_event(event)
                if future.done_event.is_set():
                    stream.end()
                    break
                if ctrl_c.pressed():
                    raise KeyboardInterrupt  # the key and the signal are handled alike
            except KeyboardInterrupt:
                stream.end()
                if question:  # Ctrl+C at the operator prompt also withdraws the answer
                    future.send_response(input_id=question["id"], value=None, cancel=True, worker=target.worker)
                    question = None
                if interrupting:
                    console.print(
                        Text(
                            f"stopped waiting; the run goes on on worker '{target.worker}' until it ends, "
                            f"see 'hermes status workers {target.worker}'",
                            style="yellow",
                        )
                    )
                    return None
                interrupting = True
                if run_id:
                    _interrupt(router, target, run_id, console)
                else:
                    console.print(
                        Text("interrupting as soon as the run starts (Ctrl+C again stops waiting)", style="yellow")
                    )
        reply = future.result(timeout=invoke_job_timeout(timeout))
    if not reply or target.worker not in reply:
        errors = "; ".join(client_job_errors(router.client, future.uuid)) or "no result"
        raise RoutingError(f"hermes invoke on worker '{target.worker}' returned no result: {errors}")
    return Turn(reply[target.worker], stream.text)


def _interrupt(router: Router, target: Target, run_id: str, console: Console) -> None:
    console.print(
        Text(f"interrupting run {run_id} on worker '{target.worker}' (Ctrl+C again stops waiting)", style="yellow")
    )
    try:
        answer = router.one("interrupt", target, {"run_id": run_id})
    except RoutingError as error:
        console.print(Text(str(error), style="red"))
        return
    if answer.get("failed"):
        console.print(Text("; ".join(answer.get("errors") or ["interrupt failed"]), style="red"))


def event_line(time: str, severity: str, message: str) -> Text:
    """One event of a run: clock time, severity, message; a long message wraps in a narrow terminal."""
    severity = "WARNING" if severity.upper().startswith("WARN") else severity.upper()
    style = {"WARNING": "yellow", "ERROR": "red", "CRITICAL": "red"}.get(severity, "green")
    return Text.assemble((time, "dim"), " ", (f"{severity:<7}", style), " ", message)


def own_job_event(event: dict) -> bool:
    """NorFab's own events of the invoke job (its start, its result, an input request the shell prompts)."""
    return event.get("event_type") in ("input_request", "result_ready") or event.get("message") == "starting"


def job_event_line(event: dict) -> Text:
    """A job event of the run as :func:`event_line` shows it (the invoke's header names worker and agent)."""
    stamp = str(event.get("timestamp") or "").split()  # NorFab's "01-Dec-2026 15:11:37.401"
    severity = str(getattr(event.get("severity"), "value", event.get("severity")) or "INFO")
    return event_line(stamp[-1] if stamp else "", severity, " ".join(str(event.get("message", "")).split()))


def markdown(text: str) -> Markdown:
    """Markdown that keeps single line breaks: device output and native command answers are line oriented."""
    return Markdown(re.sub(r"(?<!\n)\n(?!\n)", "  \n", text))


def error_text(errors: List[str]) -> Text:
    return Text("\n".join(errors) or "failed", style="red")


def reply_view(res: dict, continue_hint: Optional[str] = None, streamed: str = "") -> RenderableType:
    """An invoke Result as Markdown reply, tool calls, warnings and the ids to continue with.

    A reply already ``streamed`` to the terminal as it is is not shown again.
    """
    if res.get("failed") or not res.get("result"):
        return error_text(res.get("errors") or [f"invoke failed: {res.get('status')}"])
    data = InvokeResultData.model_validate(res["result"])
    shown = bool(data.response) and data.response.strip() == streamed.strip()
    parts: List[RenderableType] = [] if shown else [markdown(data.response or "(no reply)")]
    for call in data.tool_calls:
        where = f" {call.service}.{call.task}" if call.service else ""
        job = f" job {call.job_uuid}" if call.job_uuid else ""
        problem = f": {call.error}" if call.error else ""
        asked = call.delegated
        child = f" -> {asked.agent}@{asked.worker} run {asked.run_id} session {asked.session_id}" if asked else ""
        parts.append(
            Text(f"tool {call.tool}{where} {call.status} in {call.duration:.2f}s{job}{child}{problem}", style="dim")
        )
    for warning in data.warnings:
        parts.append(Text(f"warning: {warning}", style="yellow"))
    style = "dim" if data.stop_reason == "completed" else "yellow"
    parts.append(
        Text(
            f"{data.stop_reason} | run {data.run_id} | session {data.session_id} | worker {data.worker} | "
            f"agent {data.agent} | {data.usage.total_tokens} tokens",
            style=style,
        )
    )
    if data.lineage:
        parts.append(
            Text(f"asked by {' -> '.join(data.lineage.chain)} (run {data.lineage.parent_run_id})", style="dim")
        )
    if data.structured_error:
        parts.append(Text(f"structured answer: {data.structured_error}", style="yellow"))
    if data.artifacts:
        evidence = f"hermes evidence {data.agent} {data.run_id} workers {data.worker}"
        parts.append(Text(f"{len(data.artifacts)} tool result(s) kept whole as evidence: {evidence}", style="dim"))
    if continue_hint:
        parts.append(Text(continue_hint, style="dim"))
    return Group(*parts)


def as_text(event: dict) -> dict:
    """An input request whose question (model text, a change's preview of device output) prints as
    text, never as markup. NorFab's collect_input_request asks a yes/no with a timeout through
    prompt_toolkit, which shows text as it is; anything else through rich, which reads markup."""
    request = event["extras"]["input_request"]
    if isinstance(request.get("default"), bool) and (request.get("timeout") or event.get("timeout")):
        return event
    shown = {**request, "question": escape(str(request.get("question", "")))}
    return {**event, "extras": {**event["extras"], "input_request": shown}}
