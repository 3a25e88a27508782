"""
Every PICLE private name the hermes shell uses, in one place (picle 0.13.0,
pinned by NorFab); ``tests/test_picle_compat.py`` holds PICLE to them.

* :func:`read_line` reads one line through nfcli's own prompt
  (``App._read_interactive_input``): same history and terminal handling.
* :func:`install` makes two of PICLE's global behaviours fit commands that
  take free text, once per process (the plugin seam hands us no App, and
  nfcli builds its App before it imports the plugin, so the class is changed):

  - ``?`` typed inside an open quote is part of the text: PICLE binds the key
    to inline help everywhere, so ``hermes invoke routing "Why r2?"`` showed
    help and lost the ``?`` (``App._request_inline_help``);
  - ``history ARGS`` in a subshell whose model has a ``history`` command runs
    that command (``nf[hermes]# history AGENT schedule ID``), as the same
    line does from ``nf#``; a bare ``history`` is still PICLE's command
    history (``App.do_history``).

* :data:`Maybe` types an optional field whose annotation PICLE reads.
"""

from typing import TYPE_CHECKING, Any, Optional, TypeVar

from picle import App
from prompt_toolkit.application import get_app

PATCHED = "_norfab_hermes_patched"  # marks App once install() ran

T = TypeVar("T")

if TYPE_CHECKING:
    Maybe = Optional[T]
else:

    class Maybe:
        """``Maybe[X]``: ``Optional[X]`` to the type checker, ``X`` itself at run time.

        PICLE decides by a field's annotation: exactly ``str`` keeps values as
        typed (an id 0012 stays 0012, ``App._save_collected_value``), a model
        class is a subcommand and a ``Dict`` with a ``pkey`` a verb taking a
        key (``App.parse_command``). ``Optional[...]`` would hide all three, so
        a field that defaults to None says ``Maybe[...]`` instead.
        """

        def __class_getitem__(cls, item: Any) -> Any:
            return item


def read_line(app: Any, prompt: Any) -> str:
    """A line typed at nfcli's prompt (``prompt`` may be a callable), without inline help on ``?``."""
    return app._read_interactive_input(prompt, inline_help=False)


def in_open_quote(text: str) -> bool:
    """Whether ``text`` ends inside a quoted value, as PICLE's parser reads quotes.

    PICLE splits on spaces; a word starting with a quote opens a value unless
    it holds that quote twice, and the next word holding it closes the value.
    """
    quote = None
    for word in text.split(" "):
        if quote is None:
            if word.startswith(("'", '"')) and word.count(word[0]) != 2:
                quote = word[0]
        elif quote in word:
            quote = None
    return quote is not None


def install() -> None:
    """Change PICLE's App class for quoted ``?`` and subshell ``history``; safe to call twice."""
    if getattr(App, PATCHED, False):
        return
    inline_help, history = App._request_inline_help, App.do_history

    def request_inline_help(self: App, document: Any) -> None:
        if in_open_quote(document.text_before_cursor):
            get_app().current_buffer.insert_text("?")  # the key handler runs inside the prompt's application
        else:
            inline_help(self, document)

    def do_history(self: App, arg: str) -> Any:
        model = self.shell if isinstance(self.shell, type) else type(self.shell)
        if arg.strip() and "history" in getattr(model, "model_fields", {}):
            return self.default(f"history {arg}")
        return history(self, arg)

    do_history.__doc__ = history.__doc__
    App._request_inline_help = request_inline_help
    App.do_history = do_history
    setattr(App, PATCHED, True)
