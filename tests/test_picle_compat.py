"""
Contract tests: the PICLE internals norfab_hermes.nfcli.picle_compat relies on exist in the
installed, pinned picle with the behaviour we use, and no other module reaches into PICLE.
Run when bumping the pin. A tiny PICLE app, no NorFab.
"""

import ast
import contextlib
import inspect
import io
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any, Dict, Optional

import pytest
from picle import App
from prompt_toolkit import PromptSession
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput
from pydantic import BaseModel, Field, StrictStr

from norfab_hermes.nfcli import picle_compat

PACKAGE = Path(__file__).resolve().parent.parent / "norfab_hermes"
RAN = []


class HistoryArgs(BaseModel):
    schedule: Optional[StrictStr] = Field(None, description="Schedule id")

    @staticmethod
    def run(**kwargs: Any) -> str:
        RAN.append(kwargs)
        return "history of a schedule"


class Sub(BaseModel):
    history: Dict[StrictStr, HistoryArgs] = Field(
        None, description="Runs of a schedule", json_schema_extra={"pkey": "agent"}
    )
    say: Any = Field(None, description="TEXT - say it")

    class PicleConfig:
        subshell = True
        prompt = "t[sub]#"

    @staticmethod
    def run(**kwargs: Any) -> str:
        RAN.append(kwargs)
        return "said"


class Root(BaseModel):
    sub: Sub = Field(None, description="A subshell with a history command")

    class PicleConfig:
        prompt = "t#"
        history_file = None
        use_rich = False


@pytest.fixture
def app():
    picle_compat.install()
    RAN.clear()
    shell = App(Root, stdout=io.StringIO())
    shell.use_rich = False
    return shell


def typed(app: App, keys: str) -> str:
    """``keys`` typed at the app's real prompt_toolkit prompt (inline help on), the line it returns."""
    with create_pipe_input() as pipe:
        app._prompt_session = PromptSession(
            input=pipe, output=DummyOutput(), history=app._history, key_bindings=app._prompt_key_bindings
        )
        pipe.send_text(keys)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            line = app._read_interactive_input("t#")
    return line, out.getvalue() + app.stdout.getvalue()


def test_pinned_version():
    assert version("picle") == "0.13.0"


def test_the_private_names_exist_with_the_shapes_used():
    assert list(inspect.signature(App._read_interactive_input).parameters) == ["self", "prompt", "inline_help"]
    assert list(inspect.signature(App._request_inline_help).parameters) == ["self", "document"]
    assert list(inspect.signature(App.do_history).parameters) == ["self", "arg"]
    shell = App(Root, stdout=io.StringIO())
    assert shell._prompt_key_bindings is not None
    assert shell.shells == [shell.shell]


def test_a_question_mark_inside_quotes_is_text(app):
    line, out = typed(app, 'sub say "Why does traffic go through r2?"\r')
    assert line == 'sub say "Why does traffic go through r2?"'
    assert "say it" not in out  # no help printed
    app.onecmd(line)
    assert RAN[-1]["say"] == "Why does traffic go through r2?"


def test_a_question_mark_outside_quotes_still_shows_help(app):
    line, out = typed(app, 'sub say "done" ?\r')
    assert line == 'sub say "done" '  # help is shown; the key is not typed
    assert "Runs of a schedule" in out  # PICLE's help of the fields that may follow


@pytest.mark.parametrize(
    "text, inside",
    [
        ('hermes invoke routing "Why', True),
        ('hermes invoke routing "Why"', False),
        ("hermes invoke routing \"r1's loopback", True),  # an apostrophe inside double quotes
        ("hermes invoke routing 'Why", True),
        ('hermes invoke routing "a b" "c', True),
        ('hermes invoke routing "a b" c', False),
        ("hermes invoke routing it's", False),  # a quote opens a value only at the start of a word
        ("hermes ", False),
    ],
)
def test_open_quotes_are_read_as_picle_reads_them(text, inside):
    assert picle_compat.in_open_quote(text) is inside


def test_history_with_arguments_in_a_subshell_runs_its_history_command(app):
    app.onecmd("sub")
    assert app.prompt == "t[sub]#"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        app.onecmd("history bgp schedule r1-watch")
    assert RAN == [{"agent": "bgp", "schedule": "r1-watch"}]
    app.stdout.truncate(0)
    app.onecmd("history")  # bare: PICLE's command history, as before
    assert RAN == [{"agent": "bgp", "schedule": "r1-watch"}]
    assert app.stdout.getvalue()


def test_only_picle_compat_touches_picle_private_names():
    private = {name for name in dir(App) if name.startswith("_") and not name.startswith("__")}
    private |= {"_prompt_session", "_prompt_key_bindings", "_history", "_inline_help_enabled", "_last_inline_help"}
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "picle_compat.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr in private:
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {node.attr}")
    assert not found, found


def test_mounting_the_hermes_shell_installs_the_changes():
    """NorFab imports the plugin after it built nfcli's App: the import alone must change PICLE."""
    code = (
        "import norfab_hermes.nfcli_shell; from picle import App; print(getattr(App, '_norfab_hermes_patched', False))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "True", done.stderr[-2000:]
