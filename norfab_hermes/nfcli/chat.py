"""
``hermes chat``: an interactive chat with one agent, inside ``nf#``.

The chat keeps (worker, agent, session): every line is one invoke in the same
session on the same worker, shown live (model requests and tool calls as they
happen). Lines starting with ``/`` are chat commands; the ones the chat does
not know go to the agent's native commands through the ``command`` task.

The loop reads lines through PICLE's prompt (:func:`.picle_compat.read_line`,
which accepts a callable prompt, so ``WORKER/AGENT>`` follows ``/agent``) but
not through PICLE's chat loop: in PICLE 0.13 that loop leaves its command
model on the shell stack after Ctrl+D, ends nfcli on Ctrl+C, and can only
dispatch slash commands it has models for, so native commands such as
``/usage`` could not pass through.
"""

from typing import Any, List, Optional

from rich.console import Console
from rich.text import Text

from ..models import AgentSummary, CommandResultData, SessionSummary
from ..routing import COMMAND_JOB_TIMEOUT, Router, RoutingError, Selector, Target
from .common import router
from .live import CtrlC, error_text, markdown, own_job_event, reply_view, run_turn
from .picle_compat import read_line
from .tables import CLIP, short_time, table

# native commands after which the chat follows the session the command answers with
SESSION_COMMANDS = ("/new", "/reset", "/resume")

HELP = """chat commands:
  /sessions                 list this agent's sessions
  /new                      start a new session with the next message
  /agent NAME (workers W)   switch agent (looked up on this worker unless workers is given); new session
  /exit                     leave the chat (Ctrl+D too); nothing is stopped
  /help                     this help, then the agent's native commands
  /COMMAND ...              any other /command runs as the agent's native command, e.g. /usage, /status
Ctrl+C interrupts the reply in progress; at the prompt it clears the line."""


class Chat:
    """
    One chat: its target, its session and the loop reading lines.

    Args:
        app: the PICLE App of nfcli.
        router: routing over the shell's NorFab client.
        target: worker and agent to chat with.
        session_id: session to continue; None starts a new one.
        timeout: run budget of each turn in seconds.
    """

    def __init__(self, app: Any, router: Router, target: Target, session_id: Optional[str], timeout: Any) -> None:
        self.app = app
        self.router = router
        self.target = target
        self.session_id = session_id
        self.timeout = timeout
        self.console = Console()

    def prompt(self) -> str:
        return f"{self.target.worker}/{self.target.agent}> "

    def loop(self) -> None:
        self.say(
            f"chat with agent '{self.target.agent}' on worker '{self.target.worker}', "
            f"session {self.session_id or 'new'}; /help lists commands, Ctrl+C interrupts a reply, "
            "/exit or Ctrl+D leaves"
        )
        while True:
            try:
                line = read_line(self.app, self.prompt).strip()
            except KeyboardInterrupt:
                continue
            except EOFError:
                break
            if not line:
                continue
            try:
                with CtrlC():
                    if line.startswith("/"):
                        if self.slash(line):
                            break
                    else:
                        self.turn(line)
            except RoutingError as error:
                self.console.print(Text(str(error), style="red"))
            except KeyboardInterrupt:
                self.say("cancelled")
        where = f"agent '{self.target.agent}' on worker '{self.target.worker}'"
        self.say(f"left chat; session {self.session_id} of {where}" if self.session_id else f"left chat with {where}")

    def say(self, message: str, style: str = "dim") -> None:
        self.console.print(Text(message, style=style))

    # ------------------------------------------------------------------ turns

    def turn(self, line: str) -> None:
        # the session lives on this worker only: a worker that went away is an error, never a re-route
        self.router.require_alive(self.target.worker)
        turn = run_turn(self.router, self.target, line, self.session_id, self.timeout, self.show_event, self.console)
        if turn is None:
            return
        self.session_id = (turn.result.get("result") or {}).get("session_id") or self.session_id
        self.console.print(reply_view(turn.result, streamed=turn.streamed))

    def show_event(self, event: dict) -> None:
        if own_job_event(event):  # the question is prompted; the job's start and end are noise here
            return
        message = " ".join(str(event.get("message", "")).split())
        severity = str(getattr(event.get("severity"), "value", event.get("severity")) or "INFO").upper()
        self.say(f"  {message}", "yellow" if severity in ("WARNING", "ERROR", "CRITICAL") else "dim")

    # --------------------------------------------------------------- commands

    def slash(self, line: str) -> bool:
        """Run a chat command; True leaves the chat."""
        words = line.split()
        name = words[0]
        if name in ("/exit", "/quit"):
            return True
        if name == "/new":
            self.session_id = None
            self.say("new session: it starts with your next message")
        elif name == "/sessions":
            self.sessions()
        elif name == "/agent":
            self.switch(words[1:])
        else:
            if name == "/help":
                self.console.print(Text(HELP))
            self.native(line)
        return False

    def sessions(self) -> None:
        res = self.router.one("get_sessions", self.target)
        if res.get("failed"):
            self.console.print(error_text(res.get("errors") or []))
            return
        rows = [
            [s.session_id, s.title, short_time(s.last_active), s.message_count, s.preview]
            for s in (SessionSummary.model_validate(item) for item in res["result"])
        ]
        columns = ["session", "title", "last active", "messages", "preview"]
        text = {"title": CLIP, "preview": CLIP}
        self.console.print(
            table(f"sessions of '{self.target.agent}'", columns, rows, drop=["title", "messages"], text=text)
        )

    def switch(self, words: List[str]) -> None:
        if len(words) not in (1, 3) or (len(words) == 3 and words[1] != "workers"):
            raise RoutingError("usage: /agent NAME (workers WORKER)")
        workers = words[2] if len(words) == 3 else self.target.worker
        hosting = self.router.hosting(words[0], workers)
        if len(hosting) > 1:
            raise RoutingError(
                f"agent '{words[0]}' is served by several hermes workers: {', '.join(hosting)}; "
                f"choose one with /agent {words[0]} workers WORKER"
            )
        self.target, self.session_id = Target(hosting[0], words[0]), None
        self.say(f"now chatting with agent '{self.target.agent}' on worker '{self.target.worker}', new session")

    def native(self, line: str) -> None:
        res = self.router.one(
            "command", self.target, {"command": line, "session_id": self.session_id}, COMMAND_JOB_TIMEOUT
        )
        if res.get("failed"):
            self.console.print(error_text(res.get("errors") or []))
            return
        data = CommandResultData.model_validate(res["result"])
        if data.session_id and (self.session_id or line.startswith(SESSION_COMMANDS)):
            self.session_id = data.session_id
        self.console.print(markdown(data.response or "(no answer)"))


def start(app: Any, agent: Optional[str], session: Optional[str], workers: Optional[str], timeout: Any) -> None:
    """``hermes chat (AGENT)``: chat with AGENT, or with one picked from a list (no AGENT, or on many workers)."""
    routes = router()
    if agent is None:
        target = pick_agent(app, routes, workers)
    elif session:
        target = routes.resolve(agent, workers, session)
    else:
        hosting = routes.hosting(agent, workers)
        target = Target(hosting[0], agent) if len(hosting) == 1 else pick_agent(app, routes, hosting, agent)
    if target is not None:
        Chat(app, routes, target, session, timeout).loop()
    return None  # True would end nfcli


def pick_agent(app: Any, router: Router, workers: Selector = None, agent: Optional[str] = None) -> Optional[Target]:
    """A numbered list of available agents (named ``agent`` if given) to choose from; None if cancelled."""
    choices, rows = [], []
    for worker, res in sorted(router.agents(workers).items()):
        if res.get("failed"):
            continue
        for summary in (AgentSummary.model_validate(item) for item in res["result"]):
            if summary.available and agent in (None, summary.name):
                choices.append(Target(worker, summary.name))
                rows.append([len(choices), worker, summary.name, summary.model, summary.description])
    if not choices:
        raise RoutingError("no available hermes agents to chat with; see 'hermes agents'")
    if len(choices) == 1:
        return choices[0]
    console = Console()
    columns = ["#", "worker", "agent", "model", "description"]
    console.print(table("choose an agent", columns, rows, drop=["model", "description"], text={"description": CLIP}))
    while True:
        try:
            answer = read_line(app, f"agent number 1-{len(choices)} (Enter cancels): ")
        except (KeyboardInterrupt, EOFError):
            return None
        answer = answer.strip()
        if not answer:
            return None
        if answer.isdigit() and 1 <= int(answer) <= len(choices):
            return choices[int(answer) - 1]
        console.print(Text(f"enter a number from 1 to {len(choices)}", style="yellow"))
