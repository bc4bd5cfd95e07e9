"""The one-line magics send what was typed: options only before the text, `--` ends them,
and IPython expands nothing (nbagent's own `{name}` is the same in `%chat` and `%%chat`)."""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

import nbagent
from nbagent.testing import ScriptedModel, reply
from tests.notebook.helpers import session


def sent(model: ScriptedModel) -> list[str]:
    """What each request sent of the user's message: its text, without the notebook
    context a request puts before it (the shell's variables, from earlier tests too)."""
    texts = [str(request[-1]["content"]) for request in model.requests]
    return [t.split("]\n\n", 1)[1] if t.startswith("[Notebook state") else t for t in texts]


@pytest.mark.parametrize(
    "typed",
    [
        "what does ls -m print?",
        "how do I use -l? in grep",
        "is --new-style better than --old",
        "compare a -- b and --model x",
        "tabs\tand  double  spaces stay",
        "quote's \"unbalanced",
    ],
    ids=["dash-m", "dash-l", "long-options", "double-dash", "spacing", "quotes"],
)
def test_the_one_line_form_sends_exactly_what_was_typed(ip: InteractiveShell,
                                                         typed: str) -> None:
    model = ScriptedModel(default=reply("ok"))
    agent = session(model)
    with capture_output():
        ip.run_cell(f"%chat {typed}")
    assert sent(model) == [typed]
    assert nbagent.current() is agent and agent.model is model  # no option was read


def test_options_come_first_and_double_dash_ends_them(ip: InteractiveShell) -> None:
    model = ScriptedModel(default=reply("ok"))
    session(model)
    with capture_output():
        ip.run_line_magic("chat", "-- --new is text here")
        ip.run_line_magic("chat", "--new -- -1 is a number?")
    assert sent(model) == ["--new is text here", "-1 is a number?"]
    assert len(nbagent.current().history.messages) == 3  # the second started a new session


def test_an_unknown_first_option_is_refused_with_the_way_to_send_it(
        ip: InteractiveShell) -> None:
    model = ScriptedModel(default=reply("ok"))
    session(model)
    with pytest.raises(UsageError, match=r"put -- before it: %chat -- -l\? …"):
        ip.run_line_magic("chat", "-l? means long listing")
    assert model.requests == []


def test_no_variable_expansion_by_ipython_and_the_same_references_in_both_forms(
        ip: InteractiveShell) -> None:
    import pandas as pd

    ip.user_ns["x"] = 41
    ip.user_ns["df"] = pd.DataFrame({"city": ["Oslo", "Lima"], "visits": [3, 5]})
    model = ScriptedModel(default=reply("ok"))
    session(model, namespace=ip.user_ns)
    with capture_output():
        ip.run_cell("%chat what is $x and {df}")
        ip.run_cell("%%chat\nwhat is $x and {df}")
    line, cell = sent(model)
    assert line == cell  # one expansion, nbagent's own, in both forms
    assert "$x" in line and "41" not in line.split("$x")[0]  # IPython did not expand $x
    assert "Oslo" in line and "visits" in line  # the table as nbagent renders it
    assert "\n" in line.split("what is $x and ")[1]  # not flattened to one line by IPython


def test_compact_focus_and_pin_text_are_kept_verbatim(ip: InteractiveShell) -> None:
    from nbagent.testing import ScriptedSummarizer
    from tests.helpers import nine_sections

    summarize = ScriptedSummarizer(default=nine_sections())
    agent = session(ScriptedModel(default=reply("a long analysis " * 60)), summarize)
    with capture_output():
        for turn in range(3):
            ip.run_line_magic("chat", f"question {turn} " * 40)
        ip.run_cell("%compact keep -m and --show {df} $x verbatim")
        ip.run_cell("%pin the flag is -l? and {not_a_var} costs $5")
    assert "keep -m and --show {df} $x verbatim" in str(summarize.requests[0])
    assert agent.pins() == ["the flag is -l? and {not_a_var} costs $5"]


def test_resume_takes_a_session_id_but_not_the_first_word_of_a_message(
        ip: InteractiveShell) -> None:
    first = session(ScriptedModel([reply("remembered")]))
    with capture_output():
        ip.run_line_magic("chat", "remember 42")
    first.session.close()
    nbagent.set_current(None)
    with capture_output():
        ip.run_line_magic("chat", f"--resume {first.session_id}")
    resumed = nbagent.current()
    assert resumed.session_id == first.session_id
    resumed.use_model(ScriptedModel(default=reply("it was 42")))
    resumed.session.close()
    nbagent.set_current(None)
    with capture_output():
        ip.run_line_magic("chat", "--resume what was the number?")
    again = nbagent.current()
    assert again.session_id == first.session_id  # "latest", and the rest is the message
