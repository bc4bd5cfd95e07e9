"""Code the model runs, through a real IPython shell with the magics loaded (the kernel
path is tests/notebook/test_code_runs_kernel.py): `%nbagent run_code=…` changes the
policy, a run shows its code header and value in the cell, `%nbagent cells` offers the
runs' code as the next input, and the cells the user ran join the next chat message."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output
from nbagent.widgets import TAGS, allowed_link

import nbagent
from nbagent.approval import ANSWERS, UNANSWERED, Verdict, outcome_note
from nbagent.testing import ScriptedModel, calls, reply
from tests.notebook.helpers import plain, session, shown
from tests.notebook.test_render import PAYLOADS

# the shell is shared by the notebook tests: the variables made here leave with them
pytestmark = pytest.mark.usefixtures("clean_namespace")


def test_nbagent_shows_and_changes_the_policy(ip: InteractiveShell) -> None:
    session(ScriptedModel())
    assert nbagent.current().settings().run_code == "ask"
    with capture_output() as captured:
        ip.run_line_magic("nbagent", "run_code=auto see_cells=false")
    agent = nbagent.current()
    assert (agent.settings().run_code, agent.settings().see_cells) == ("auto", False)
    assert "run_code" in captured.stdout + "".join(plain(captured))
    ip.run_line_magic("nbagent", "run_code=off")
    assert "run_code" not in agent.tools


def test_nbagent_names_run_code_and_cells_as_things_it_takes(ip: InteractiveShell) -> None:
    from IPython.core.error import UsageError

    session(ScriptedModel())
    with pytest.raises(UsageError) as refused:
        ip.run_line_magic("nbagent", "runcode")
    assert "run_code=ask|auto|off" in str(refused.value) and "'cells'" in str(refused.value)
    help_text = ip.find_line_magic("nbagent").__doc__
    settable = help_text[help_text.index("Settable:"):]
    assert "run_code" in settable and "see_cells" in settable


def test_a_run_shows_in_the_cell_and_the_runs_become_a_cell(ip: InteractiveShell) -> None:
    namespace = ip.user_ns
    agent = session(ScriptedModel([calls(("run_code", {"code": "seen = 6 * 7\nseen"})),
                                   reply("It is 42.")]),
                    namespace=namespace, settings=nbagent.Settings(run_code="auto"))
    with capture_output() as captured:
        ip.run_cell_magic("chat", "", "compute it")
    outputs = shown(captured)
    (code,) = [o for o in outputs if "agent run 1" in str(o.get("text/markdown", ""))]
    assert "ran in" in code["text/markdown"] and "seen = 6 * 7" in code["text/markdown"]
    assert any(o.get("text/plain") == "42" for o in outputs)
    assert namespace["seen"] == 42
    ip.rl_next_input = None
    with capture_output() as captured:
        ip.run_line_magic("nbagent", "cells")
    assert ip.rl_next_input == "# agent run 1 (ok)\nseen = 6 * 7\nseen"
    assert "1 run(s) is in a new cell below" in "".join(plain(captured)) + captured.stdout
    assert agent.history.messages[-1]["content"] == "It is 42."


def test_the_cells_the_user_ran_go_with_the_next_message(ip: InteractiveShell) -> None:
    model = ScriptedModel(default=reply("noted"))
    session(model, namespace=ip.user_ns)
    ip.run_cell("answer = 40 + 2\nanswer", store_history=True)
    ip.run_cell("1 / 0", store_history=True)
    with capture_output():
        ip.run_cell_magic("chat", "", "what happened?")
    sent = model.requests[-1][-1]["content"]
    assert "the cells the user ran since your last turn" in sent
    assert "answer = 40 + 2" in sent and "42" in sent and "ZeroDivisionError" in sent
    assert sent.index("ZeroDivisionError") < sent.index("what happened?")
    with capture_output():
        ip.run_cell_magic("chat", "", "and now?")
    assert "the cells the user ran" not in model.requests[-1][-1]["content"]  # sent once


class Unshowable:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")


def test_in_a_terminal_shell_printing_and_an_unshowable_value_end_only_the_run(
        ip: InteractiveShell) -> None:
    from nbagent.widgets import NotebookRunner

    runner = NotebookRunner(ip)  # no capture: a terminal shell prints displays to stdout
    with capture_output() as captured:
        printed = runner.run("for i in range(3):\n    print('tick', i)", {}, "agent run 1")
    assert printed.status == "ok" and "tick 2" in printed.text
    assert [o.get("text/plain") for o in shown(captured)].count("tick 0\ntick 1\ntick 2\n") == 1
    odd = runner.run("Unshowable()", {"Unshowable": Unshowable}, "agent run 2")
    assert odd.status == "ok"  # its display failed; the run did not


# An approved, harmless-looking run whose data was read from an untrusted file: payloads in
# DataFrame cells and column names, shown as a table and a Styler, and display objects of
# every kind — the replies' payloads among them. Each payload sets a page flag if it ever
# runs (tests/real/test_browser_run_inert.py).
FLAGGED = "\n\n".join(PAYLOADS.values()).replace("alert(1)", "top.__pwned=20").replace(
    "alert(2)", "top.__pwned=21").replace("msgbox(1)", "top.__pwned=22")
HOSTILE_RUN = f'''\
import pandas as pd
from IPython.display import HTML, SVG, Javascript, Latex, Markdown, display
cell = '<img src=x onerror="top.__pwned=1">'
df = pd.DataFrame({{"name": [cell, "plain"], "<script>top.__pwned=2</script>": [1, 2],
                   "n": [3, 4]}})
display(df)
display(df.style.highlight_max(subset=["n"]))
display(HTML('<b onmouseover="top.__pwned=3">hover</b><script>top.__pwned=4</script>'))
display(Markdown('**bold** <img src=x onerror="top.__pwned=5"> [x](javascript:top.__pwned=6)'))
display(SVG('<svg xmlns="http://www.w3.org/2000/svg" onload="top.__pwned=7">'
            '<script>top.__pwned=8</script><circle r="5"/></svg>'))
display(Javascript("top.__pwned=9"))
display(Latex(r"$\\href{{javascript:top.__pwned=10}}{{x}}$"))

class Shiny:
    def _repr_html_(self):
        return '<iframe srcdoc="<script>top.__pwned=11</script>"></iframe><i>shiny</i>'

display(Shiny())
display({{"text/html": '<a href="javascript:top.__pwned=12">link</a>',
         "application/vnd.jupyter.widget-view+json": {{"model_id": "x"}},
         "text/plain": "a raw bundle"}}, raw=True)
payloads = {FLAGGED!r}
display(HTML(payloads))
display(Markdown(payloads))
pd.DataFrame({{"payload": payloads.split("\\n\\n")}}).style.highlight_null()
'''
SVG_IMAGE = "data:image/svg+xml;base64,"


class Live(HTMLParser):
    """What in an output's HTML could run, or fetch, in a page that trusts it."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value or "" for name, value in attrs}
        svg_image = tag == "img" and values.get("src", "").startswith(SVG_IMAGE) and \
            set(values) == {"src", "alt"}
        if tag not in TAGS and not svg_image:
            self.found.append(f"<{tag}>")
        for name, value in values.items():
            if name.startswith("on") or name in ("srcdoc", "action", "formaction"):
                self.found.append(f"{name} on <{tag}>")
            if name == "style" and not (tag in ("span", "th", "td") and all(
                    part.split(":")[0].strip() in ("text-align", "color")
                    for part in value.split(";") if part.strip())):
                self.found.append(f"style={value!r} on <{tag}>")
            if name in ("href", "src", "xlink:href", "data") and not svg_image and not (
                    tag == "a" and name == "href" and allowed_link(value)):
                self.found.append(f"{name}={value!r} on <{tag}>")


def live_parts(outputs: list[dict[str, Any]]) -> list[str]:
    """What in these outputs could run in a page that trusts them (nothing, if inert): a
    kind a front end runs or inserts as markup, or live markup in their HTML. Our code
    header (Markdown we write, the code inside a fence) is not the run's."""
    found = [f"{mime} output" for o in outputs for mime in o
             if (mime in ("application/javascript", "image/svg+xml", "text/latex")
                 or mime.startswith("application/") or mime == "text/markdown"
                 and not str(o[mime]).startswith("*agent run"))]
    for o in outputs:
        if str(o.get("text/html", "")).startswith(('<div class="nbagent-',
                                                  '<details class="nbagent-')):
            continue  # one of the chat's own lines (the reply, a tool line)
        live = Live()
        live.feed(str(o.get("text/html", "")))
        live.close()
        found += live.found
    return found


def test_everything_a_run_displays_is_inert_whatever_object_made_it(
        ip: InteractiveShell) -> None:
    agent = session(ScriptedModel([calls(("run_code", {"code": HOSTILE_RUN})), reply("ok")]),
                    namespace=ip.user_ns, settings=nbagent.Settings(run_code="auto"))
    with capture_output() as captured:
        ip.run_cell_magic("chat", "", "show the data")
    outputs = shown(captured)
    assert live_parts(outputs) == []
    tables = [o["text/html"] for o in outputs if "<table" in str(o.get("text/html", ""))]
    assert len(tables) >= 3  # the DataFrame, the Styler displayed, the Styler as the value
    assert "&lt;img src=x" in tables[0]  # the DataFrame escapes its cells: text
    assert "<td>plain</td>" in tables[1]  # the Styler does not: its markup is removed
    assert any(str(o.get("text/html")).strip() == "hover" for o in outputs)  # its text
    assert any("<strong>bold</strong>" in str(o.get("text/html", "")) for o in outputs)
    (svg,) = [o for o in outputs if str(o.get("text/html")).startswith(f'<img src="{SVG_IMAGE}')]
    assert any(o.get("text/plain") == "a raw bundle" for o in outputs)
    result = next(m["content"] for m in agent.history.messages if m["role"] == "tool")
    assert "output 2:\n" in result and "Styler at" not in result  # a Styler's text, not
    assert "hover" in result and "shiny" in result  # its repr; HTML objects' text too


def test_what_a_run_displays_is_bounded_once_in_memory_window_and_archive(
        ip: InteractiveShell, tmp_path: Any) -> None:
    code = ("from IPython.display import HTML, display\n"
            "for i in range(1500):\n"
            "    display(HTML(f'<p>row {i} ' + 'x' * 8_000 + '</p>'))")
    agent = session(ScriptedModel([calls(("run_code", {"code": code})), reply("ok")]),
                    namespace=ip.user_ns, settings=nbagent.Settings(
                        run_code="auto", data_dir=str(tmp_path)))
    with capture_output() as captured:
        ip.run_cell_magic("chat", "", "show it all")
    assert len(shown(captured)) > 1_500  # the page got every output (12 MB)
    result = next(m["content"] for m in agent.history.messages if m["role"] == "tool")
    assert "row 0 " in result and "row 1499 " in result and "outputs not kept" in result
    archived = Path(agent.session.archive.path).stat().st_size  # type: ignore[union-attr]
    assert archived < 200_000, archived  # the bounded text, kept once or twice: not 36 MB
    agent.close()
BIDI_CODE = ('access = "user"  # \u202e } \u2066if access != "admin":\u2069 \u2066 # check\n'
             "import os; os.remove(path)\u2067")


def test_the_code_waiting_for_an_answer_is_shown_exactly_and_the_question_points_at_it(
        ip: InteractiveShell) -> None:
    questions: list[str] = []
    agent = session(ScriptedModel([calls(("run_code", {"code": BIDI_CODE,
                                                        "explanation": "tidy\u200b up"})),
                                   reply("Not run.")]),
                    namespace=ip.user_ns, settings=nbagent.Settings(run_code="ask"))
    agent.approval.ask = lambda question: questions.append(question) or "n"
    with capture_output() as captured:
        ip.run_cell_magic("chat", "", "tidy up")
    (code,) = [o for o in shown(captured) if "agent run 1" in str(o.get("text/plain", ""))]
    for form in (code["text/markdown"], code["text/plain"]):
        assert not any(ch in form for ch in "\u202e\u2066\u2067\u2069\u200b"), form
        assert "⟨U+202E⟩ } ⟨U+2066⟩if access" in form and "os.remove(path)⟨U+2067⟩" in form
        assert "# tidy⟨U+200B⟩ up" in form and "not run: you declined" in form
        assert "⚠ hidden characters, shown as ⟨U+…⟩: U+200B ZERO WIDTH SPACE, " \
               "U+202E RIGHT-TO-LEFT OVERRIDE" in form
    (question,) = questions
    assert "os.remove" not in question and "shown whole above)" in question
    assert "U+2067 RIGHT-TO-LEFT ISOLATE" in question and "\u2067" not in question
    assert "access" not in ip.user_ns  # declined: nothing ran


@pytest.mark.parametrize("outcome", [*[c.key for c in ANSWERS], *UNANSWERED])
def test_the_cell_says_what_became_of_the_code_for_every_outcome(
        ip: InteractiveShell, outcome: str) -> None:
    from nbagent.widgets import NotebookRunner

    with capture_output() as captured:
        verdict = NotebookRunner(ip).ask("x = 1", "", "agent run 1",
                                         lambda shown_at: Verdict(False, "", outcome))
    assert verdict.outcome == outcome
    (header,) = shown(captured)
    assert header["text/plain"].startswith(f"agent run 1 · {outcome_note(outcome)}\n")


def test_nbagent_lists_what_runs_unasked_and_takes_it_back(ip: InteractiveShell) -> None:
    session(ScriptedModel())

    def said(line: str) -> str:
        with capture_output() as captured:
            ip.run_line_magic("nbagent", line)
        return "\n".join(plain(captured)) + captured.stdout

    assert "allowed without asking: nothing — each action asks you first" in said("")
    assert "all code the model runs runs without asking" in said("allow code")
    listing = said("")
    assert "allowed without asking: all code the model runs (%nbagent revoke … takes one " \
           "back)" in listing
    nbagent.current().approval.allow("mcp", "db", "query")
    assert "the MCP tool 'query' of 'db'" in said("")
    assert said("revoke code") == "nbagent: taken back, asks again: all code the model runs"
    assert nbagent.current().approval.allowed() == [("mcp", "db", "query")]
    assert "the MCP tool 'query' of 'db'" in said("revoke all")
    assert nbagent.current().approval.allowed() == []
    said("run_code=auto")
    assert "all code the model runs (run_code='auto')" in said("")
    assert "run_code=auto still runs all code" in said("revoke code")
    from IPython.core.error import UsageError

    with pytest.raises(UsageError, match="revoke mcp NAME"):
        ip.run_line_magic("nbagent", "revoke everything")
