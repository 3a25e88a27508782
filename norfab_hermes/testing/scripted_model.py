"""
Scripted, deterministic OpenAI-compatible model server.

Tests, examples and benchmarks point Hermes profiles at it instead of a real
provider. It speaks ``/v1/chat/completions`` (SSE streaming and plain JSON)
and ``/v1/models``, records every request, and decides each reply from the
conversation it is sent - no randomness, no network.

How a reply is decided, first match wins:

1. Injected faults: ``fail_next(n, status)`` answers the next n completions
   with an HTTP error, ``hang_next(n)`` holds them open until the server stops.
2. The last message is a tool result: the scenario step that follows the
   tool call, or ``FINAL: <tool results>`` when no scenario is running.
3. A scenario rule whose ``match`` regex finds the last user message
   (see :mod:`norfab_hermes.testing.scenario`).
4. Directives in the last line of the last user message, for tests (Hermes
   may merge an interrupted message into the next one, so only the newest
   line counts):
   ``CALL <tool> <json-args>`` (repeatable, one tool call each),
   ``SLEEP <seconds>``, ``FAIL <status>``, ``HANG``, and
   ``STREAM <words> <seconds>``: a reply of that many words, one streamed
   chunk per word every that many seconds (``first_tokens`` records when
   each such reply's first word went out).
5. ``ECHO: <last line of the user message>``.

Hermes' session-title requests get a short fixed title.
"""

import argparse
import json
import re
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, List, Optional, Tuple, cast

from .scenario import Scenario

CALL_RE = re.compile(r"CALL (\w+) (\{.*?\})(?=\s+CALL |\s*$|\s)", re.S)
SLEEP_RE = re.compile(r"SLEEP ([0-9.]+)")
STREAM_RE = re.compile(r"STREAM ([0-9]+) ([0-9.]+)")
FAIL_RE = re.compile(r"FAIL ([0-9]{3})")
HANG_RE = re.compile(r"\bHANG\b")
FINAL_CHARS = 6000
TITLE_PROMPT = "Generate a short, descriptive title"


def _text(content: Any) -> str:
    if isinstance(content, list):
        return " ".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content or ""


def last_user_text(messages: List[dict]) -> str:
    for message in reversed(messages):
        if message.get("role") == "user":
            return _text(message.get("content"))
    return ""


def tool_results_since_user(messages: List[dict]) -> List[dict]:
    """Tool messages of the current turn, oldest first, with tool name and round."""
    names: Dict[Optional[str], Optional[str]] = {}  # tool call id -> tool name
    results: List[dict] = []
    rounds = 0
    for message in messages:
        if message.get("role") == "user":
            names, results, rounds = {}, [], 0
        if message.get("tool_calls"):
            rounds += 1
        for call in message.get("tool_calls") or []:
            names[call.get("id")] = call.get("function", {}).get("name")
        if message.get("role") == "tool":
            results.append(
                {
                    "name": names.get(message.get("tool_call_id")),
                    "content": _text(message.get("content")),
                    "round": rounds,
                }
            )
    return results


def _strip_system_notes(text: str) -> str:
    # Hermes appends bracketed system notes to the first message of a chat
    return re.sub(r"\s*\[System note:.*?\]\s*$", "", text, flags=re.S).strip()


class Reply:
    """One model answer: text content or tool calls, plus how to deliver it."""

    def __init__(
        self,
        content: Optional[str] = None,
        tool_calls: Optional[List[dict]] = None,
        sleep: float = 0.0,
        status: int = 200,
        hang: bool = False,
        pace: float = 0.0,
    ) -> None:
        self.content = content
        self.tool_calls = tool_calls or []
        self.sleep = sleep
        self.status = status
        self.hang = hang
        self.pace = pace  # seconds between streamed words; 0 streams the reply in 64-character chunks at once


class ScriptedModel:
    """The model's decision logic, separate from HTTP so it is easy to reason about."""

    def __init__(self, scenario: Optional[Scenario] = None, latency: float = 0.0) -> None:
        self.scenario = scenario
        self.latency = latency
        self.requests: List[dict] = []
        self.first_tokens: List[float] = []  # when each paced reply's first word was sent (time.time())
        self._faults: List[Reply] = []
        self._lock = threading.Lock()

    def fail_next(self, count: int = 1, status: int = 500) -> None:
        with self._lock:
            self._faults.extend(Reply(status=status) for _ in range(count))

    def hang_next(self, count: int = 1) -> None:
        with self._lock:
            self._faults.extend(Reply(hang=True) for _ in range(count))

    def record(self, path: str, body: dict, headers: Dict[str, str]) -> None:
        with self._lock:
            self.requests.append(
                {
                    "path": path,
                    "body": body,
                    "authorization": headers.get("Authorization", ""),
                    "time": time.time(),
                }
            )

    def completions(self) -> List[dict]:
        """Recorded chat-completion requests of agent turns (title requests excluded)."""
        with self._lock:
            return [
                r["body"]
                for r in self.requests
                if r["path"].endswith("/chat/completions")
                and not any(TITLE_PROMPT in _text(m.get("content")) for m in r["body"].get("messages", [])[:1])
            ]

    def decide(self, body: dict) -> Reply:
        with self._lock:
            if self._faults:
                return self._faults.pop(0)
        messages = body.get("messages") or []
        tools = {t["function"]["name"] for t in body.get("tools") or [] if t.get("type") == "function"}
        if any(TITLE_PROMPT in _text(m.get("content")) for m in messages[:1]):
            return Reply(content="NorFab investigation", sleep=self.latency)
        reply = self._decide_turn(messages, tools)
        reply.sleep += self.latency
        return reply

    def _decide_turn(self, messages: List[dict], tools: set) -> Reply:
        message = _strip_system_notes(last_user_text(messages))
        lines = message.splitlines()
        text = lines[-1].strip() if lines else ""
        results = tool_results_since_user(messages)
        if self.scenario:
            system = "\n".join(_text(m.get("content")) for m in messages if m.get("role") == "system")
            step = self.scenario.next_step(text, results, tools, message, system)
            if step is not None:
                return Reply(content=step.get("content"), tool_calls=step.get("tool_calls"))
        if messages and messages[-1].get("role") == "tool":
            joined = "\n".join(f"{r['name']}: {r['content']}" for r in results)
            return Reply(content="FINAL: " + joined[:FINAL_CHARS])
        match = FAIL_RE.search(text)
        if match:
            return Reply(status=int(match.group(1)))
        if HANG_RE.search(text):
            return Reply(hang=True)
        calls = [{"name": name, "arguments": args} for name, args in CALL_RE.findall(text) if name in tools]
        if calls:
            return Reply(tool_calls=calls)
        match = STREAM_RE.search(text)
        if match:
            words = " ".join(f"word{i}" for i in range(int(match.group(1))))
            return Reply(content=words, pace=float(match.group(2)))
        match = SLEEP_RE.search(text)
        if match:
            return Reply(content="SLEPT " + match.group(1), sleep=float(match.group(1)))
        return Reply(content="ECHO: " + (text[:500] or "<empty>"))


def _usage(body: dict, reply: Reply) -> dict:
    prompt = sum(len(_text(m.get("content"))) for m in body.get("messages") or []) // 4
    completion = len(reply.content or "") // 4 + 10 * len(reply.tool_calls)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: "ScriptedModelServer"

    def log_message(self, *args: Any) -> None:
        pass

    def _json(self, status: int, payload: dict) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self.server.model.record(self.path, {}, dict(self.headers))
        if self.path.rstrip("/").endswith("/models"):
            return self._json(
                200,
                {
                    "object": "list",
                    "data": [
                        {
                            "id": model_id,
                            "object": "model",
                            "context_length": self.server.context_length,
                            "max_model_len": self.server.context_length,
                        }
                        for model_id in self.server.model_ids
                    ],
                },
            )
        return self._json(404, {"error": {"message": "not found"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        self.server.model.record(self.path, body, dict(self.headers))
        if not self.path.rstrip("/").endswith("/chat/completions"):
            return self._json(404, {"error": {"message": "not found"}})
        reply = self.server.model.decide(body)
        if reply.hang:
            self.server.stopping.wait()
            return
        if reply.sleep and self.server.stopping.wait(reply.sleep):
            return
        if reply.status != 200:
            message = f"scripted failure {reply.status}"
            if reply.status == 401:
                # like providers and proxies that quote the rejected key back
                key = str(self.headers.get("Authorization", "")).removeprefix("Bearer ")
                message = f"Incorrect API key provided: {key}"
            return self._json(reply.status, {"error": {"message": message, "type": "server_error"}})
        self._answer(body, reply)

    def _answer(self, body: dict, reply: Reply) -> None:
        cid = "chatcmpl-" + uuid.uuid4().hex[:12]
        model = body.get("model") or "scripted"
        calls: List[Dict[str, Any]] = [
            {
                "id": "call_" + uuid.uuid4().hex[:12],
                "type": "function",
                "function": {"name": c["name"], "arguments": c["arguments"]},
            }
            for c in reply.tool_calls
        ]
        finish = "tool_calls" if calls else "stop"
        usage = _usage(body, reply)
        if not body.get("stream"):
            message: Dict[str, Any] = {"role": "assistant", "content": reply.content}
            if calls:
                message["tool_calls"] = calls
            return self._json(
                200,
                {
                    "id": cid,
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": model,
                    "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                    "usage": usage,
                },
            )
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()

        def chunk(delta: dict, finish_reason: Optional[str] = None, with_usage: bool = False) -> None:
            payload = {
                "id": cid,
                "object": "chat.completion.chunk",
                "created": int(time.time()),
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
            }
            if with_usage:
                payload["usage"] = usage
            self.wfile.write(b"data: " + json.dumps(payload).encode() + b"\n\n")
            self.wfile.flush()

        chunk({"role": "assistant", "content": ""})
        for index, call in enumerate(calls):
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": index,
                            "id": call["id"],
                            "type": "function",
                            "function": {"name": call["function"]["name"], "arguments": ""},
                        }
                    ]
                }
            )
            chunk({"tool_calls": [{"index": index, "function": {"arguments": call["function"]["arguments"]}}]})
        content = reply.content or ""
        if reply.pace:
            for index, word in enumerate(re.findall(r"\S+\s*", content)):
                if index:
                    time.sleep(reply.pace)
                else:
                    self.server.model.first_tokens.append(time.time())
                chunk({"content": word})
        else:
            for start in range(0, len(content), 64):
                chunk({"content": content[start : start + 64]})
        chunk({}, finish_reason=finish, with_usage=True)
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()
        self.close_connection = True


class ScriptedModelServer(ThreadingHTTPServer):
    """HTTP front of :class:`ScriptedModel`; ``start()`` returns the base URL."""

    daemon_threads = True

    def __init__(
        self,
        model: Optional[ScriptedModel] = None,
        host: str = "127.0.0.1",
        port: int = 0,
        model_ids: Optional[List[str]] = None,
        context_length: int = 131072,
    ) -> None:
        super().__init__((host, port), _Handler)
        self.model = model or ScriptedModel()
        self.model_ids = model_ids or ["scripted-model"]
        self.context_length = context_length
        self.stopping = threading.Event()
        self._thread: Optional[threading.Thread] = None

    @property
    def base_url(self) -> str:
        host, port = cast(Tuple[str, int], self.server_address[:2])  # AF_INET: getsockname() gives (str, int)
        return "http://%s:%d/v1" % (host, port)

    def start(self) -> str:
        self._thread = threading.Thread(target=self.serve_forever, name="scripted-model", daemon=True)
        self._thread.start()
        return self.base_url

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hangs up mid-reply (an interrupted run) is routine, not an error to print."""
        if isinstance(sys.exc_info()[1], ConnectionError):  # broken pipe, reset, aborted
            return
        super().handle_error(request, client_address)

    def stop(self) -> None:
        self.stopping.set()
        self.shutdown()
        self.server_close()
        if self._thread:
            self._thread.join(5)

    def __enter__(self) -> "ScriptedModelServer":
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0].strip())
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8400)
    parser.add_argument("--scenario", help="scenario YAML file")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds per reply")
    args = parser.parse_args()
    scenario = Scenario.from_file(args.scenario) if args.scenario else None
    server = ScriptedModelServer(ScriptedModel(scenario=scenario, latency=args.latency), host=args.host, port=args.port)
    print(f"scripted model listening on {server.base_url}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
