"""The notebook's words: texts from the library name Python calls; every error, stop and
notice the notebook shows names the magic that does the same."""

from __future__ import annotations

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output
from nbagent.widgets import ChatDisplay, notebook_words, show_error

from nbagent import ChatResult
from tests.notebook.helpers import plain


@pytest.mark.parametrize(
    ("library", "notebook"),
    [
        ("Run agent.compact() now.", "Run %compact now."),
        ("agent.compact('keep the city names')", "%compact keep the city names"),
        ("or agent.undo_compaction() the last one", "or %compact --undo the last one"),
        ("raise it with agent.configure(max_context_tokens=N)", "raise it with %nbagent window=N"),
        ("agent.configure(max_context_tokens=16384, disable_compact=True)",
         "%nbagent window=16384 disable_compact=True"),
        ("start over with nbagent.new_session()", "start over with %chat --new"),
        ("offer none: nbagent.new_session(builtin_tools=False)", "offer none: %chat --new --no-tools"),
        ("try agent.use_model(NAME)", "try %nbagent model=NAME"),
        ('agent.use_model("ollama_chat/llama3.1")', "%nbagent model=ollama_chat/llama3.1"),
        ("see agent.preview_compaction() first", "see %compact --preview first"),
        ("nbagent.find_local_models() lists them", "%nbagent models lists them"),
        ("plain words stay as they are (agent.compact is a word)",
         "plain words stay as they are (agent.compact is a word)"),
    ],
    ids=["compact", "compact-focus", "undo", "window", "configure-two", "new", "no-tools",
         "model", "model-quoted", "preview", "models", "untouched"],
)
def test_library_calls_become_magics(library: str, notebook: str) -> None:
    assert notebook_words(library) == notebook


def test_errors_stops_and_status_lines_are_shown_in_notebook_words(ip: InteractiveShell) -> None:
    result = ChatResult(text="partial", stop_message="Stopped: run agent.compact() and ask again.")
    view = ChatDisplay()
    with capture_output() as captured:
        show_error("The prompt does not fit: agent.configure(max_context_tokens=N) or "
                   "nbagent.new_session(builtin_tools=False).")
        view.finish(result)
    assert plain(captured) == [
        "nbagent: The prompt does not fit: %nbagent window=N or %chat --new --no-tools.",
        "partial",
        "Stopped: run %compact and ask again.",
    ]


def test_a_notice_is_shown_in_notebook_words(ip: InteractiveShell) -> None:
    from nbagent.testing import ScriptedModel, reply
    from tests.notebook.helpers import session

    agent = session(ScriptedModel(default=reply("hi")))
    agent.notice = "continuing this notebook's conversation; nbagent.new_session() starts fresh"
    with capture_output() as captured:
        ip.run_cell_magic("chat", "", "hello")
    assert ("nbagent: continuing this notebook's conversation; %chat --new starts fresh"
            in plain(captured))
