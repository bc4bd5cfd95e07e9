"""Code the model runs, in real JupyterLab 4 under headless Chromium (ScriptedModel drives
the tool calls; the kernel runs the code): the chat cell shows the code, what it printed,
a DataFrame table, a figure from the inline backend and an error's traceback, before and
after save → kernel shut down → reload; and the `ask` loop end to end — the question in
JupyterLab's input box, the answer `c` putting the code in a new cell below, the user
running it, the next chat carrying what it printed. The server, Chromium and the page
helpers are the browser tests' (tests/real/lab.py)."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.real.lab import (
    POLL_MS,
    WAIT_MS,
    Lab,
    idle,
    notebook,
    open_notebook,
    reload,
    run_cell,
    save,
)

pytestmark = pytest.mark.real
SCREENSHOT = Path(__file__).parents[2] / "docs" / "code-runs-in-jupyterlab.png"
ANALYSIS = textwrap.dedent("""\
    import pandas as pd
    import matplotlib.pyplot as plt
    sales = pd.DataFrame({"region": ["north", "south", "east"], "revenue": [120, 80, 95]})
    print("rows:", len(sales))
    fig, ax = plt.subplots(figsize=(5, 3))
    ax.bar(sales.region, sales.revenue)
    ax.set_title("Revenue by region")
    sales.sort_values("revenue")
""")
SESSION = '''\
import nbagent
from nbagent.testing import ScriptedModel, calls, reply
model = ScriptedModel([STEPS])
agent = nbagent.new_session(model=model, settings=nbagent.Settings(
    max_context_tokens=32_000, run_code=POLICY))
'''
AUTO_STEPS = (f"calls(('run_code', {{'code': {ANALYSIS!r}, 'explanation': 'revenue by "
              "region, as a table and a bar chart'})), calls(('run_code', {'code': "
              "'sales.groupby(\"country\").revenue.sum()'})), reply('North leads with 120. "
              "There is no country column; I grouped by region instead.')")
ASK_CODE = "total = 40 + 2\nprint('the total is', total)"
# `c` hands the code over and ends the turn: no reply is asked for until the next chat
ASK_STEPS = f"calls(('run_code', {{'code': {ASK_CODE!r}}})), reply('It printed 42.')"


def session(policy: str, steps: str) -> str:
    return SESSION.replace("STEPS", steps).replace("POLICY", repr(policy))


def chat_cell_parts(cell: Any) -> dict[str, int]:
    """How many of each kind of output a chat cell shows."""
    return {
        "code": cell.locator(".jp-RenderedMarkdown pre", has_text="ax.set_title").count(),
        "printed": cell.locator(".jp-OutputArea-output[data-mime-type='text/plain']",
                                has_text="rows: 3").count(),
        "table": cell.locator(".jp-OutputArea-output table", has_text="north").count(),
        "figure": cell.locator(".jp-OutputArea-output img").count(),
        "error": cell.locator(".nbagent-run-error", has_text="KeyError").count(),
    }


def test_the_models_code_and_its_outputs_show_in_the_chat_cell_and_survive_reload(
        browser: Any, lab: Lab) -> None:
    path = lab.root / "analysis.ipynb"
    # the inline backend only where a figure is drawn: matplotlib costs a kernel ~1 s of CPU
    notebook(path, "%matplotlib inline\n" + session("auto", AUTO_STEPS), "%load_ext nbagent",
             "%%chat\nchart revenue by region")
    page = open_notebook(browser, lab, "analysis.ipynb", "code-runs")
    for index in range(3):
        run_cell(page, index)
    cell = page.locator(".jp-Notebook .jp-Cell").nth(2)
    cell.locator(".jp-OutputArea-output img").first.wait_for(timeout=WAIT_MS)
    live = chat_cell_parts(cell)
    assert live == {"code": 1, "printed": 1, "table": 1, "figure": 1, "error": 1}, live
    headers = cell.locator(".jp-RenderedMarkdown em", has_text="agent run")
    assert headers.count() == 2
    assert "ran in" in headers.nth(0).inner_text()
    assert "raised an error" in headers.nth(1).inner_text()
    assert "North leads" in cell.inner_text()
    assert "# revenue by region, as a table and a bar chart" in cell.inner_text()
    page.set_viewport_size({"width": 1100, "height": 1750})  # the whole chat cell in view
    cell.scroll_into_view_if_needed()
    cell.screenshot(path=str(SCREENSHOT))

    save(page, path, "image/png")  # the chat cell's figure, its last output
    import nbformat  # here, not at collection: its schema validator takes seconds to import
    outputs = nbformat.read(path, as_version=4).cells[2].outputs
    assert any("image/png" in o.get("data", {}) for o in outputs)
    reload(page)
    reloaded = page.locator(".jp-Notebook .jp-Cell").nth(2)
    reloaded.locator(".jp-OutputArea-output img").first.wait_for(timeout=WAIT_MS)
    assert chat_cell_parts(reloaded) == live
    page.context.close()


def test_ask_puts_the_code_in_a_cell_the_user_runs_and_the_next_chat_sees_its_output(
        browser: Any, lab: Lab) -> None:
    path = lab.root / "ask.ipynb"
    notebook(path, session("ask", ASK_STEPS), "%load_ext nbagent", "%%chat\nadd them up",
             "%%chat\nwhat did it print?",
             "print('SENT', model.requests[-1][-1]['content'])")
    page = open_notebook(browser, lab, "ask.ipynb", "code-ask")
    run_cell(page, 0)
    run_cell(page, 1)
    chat = run_cell(page, 2, wait=False)
    box = chat.locator(".jp-Stdin-input")
    box.wait_for(timeout=WAIT_MS)
    # the input box can show before the code's header line is drawn
    chat.get_by_text("waiting for your answer").first.wait_for(timeout=WAIT_MS)
    assert "total = 40 + 2" in chat.inner_text()
    box.fill("c")
    box.press("Enter")
    cells = page.locator(".jp-Notebook .jp-Cell")
    page.wait_for_function("() => document.querySelectorAll('.jp-Notebook .jp-Cell').length "
                           "=== 6", timeout=WAIT_MS, polling=POLL_MS)
    idle(page)
    assert "it is in a new cell below" in chat.inner_text()
    assert "The code is in a new cell below, for you to edit and run" in chat.inner_text()
    proposed = cells.nth(3)
    assert "total = 40 + 2" in proposed.locator(".jp-InputArea-editor").inner_text()
    run_cell(page, 3)
    assert "the total is 42" in proposed.inner_text()
    run_cell(page, 4)
    assert "It printed 42." in cells.nth(4).inner_text()
    run_cell(page, 5)
    sent = cells.nth(5).locator(".jp-OutputArea-output").inner_text()
    assert "the cells the user ran since your last turn" in sent
    assert "the total is 42" in sent and "what did it print?" in sent
    page.context.close()


# Trojan Source: drawn live, the bidi controls make the removal read as part of a comment.
BIDI_CODE = ('access_level = "user"\n'
             'if access_level != "none\u202e \u2066# check if admin\u2069 \u2066":\n'
             '    import os; os.remove("orders.csv")  # \u2067 done\n')
BIDI_STEPS = (f"calls(('run_code', {{'code': {BIDI_CODE!r}, 'explanation': "
              "'check the access level'})), reply('Not run, then.')")
RAW = "\u202e\u2066\u2067\u2069"


def test_the_code_asked_about_is_shown_exactly_and_a_stray_enter_runs_nothing(
        browser: Any, lab: Lab) -> None:
    (lab.root / "orders.csv").write_text("id\n1\n")
    path = lab.root / "bidi.ipynb"
    notebook(path, session("ask", BIDI_STEPS), "%load_ext nbagent", "%%chat\ncheck access")
    page = open_notebook(browser, lab, "bidi.ipynb", "code-bidi")
    run_cell(page, 0)
    run_cell(page, 1)
    chat = run_cell(page, 2, wait=False)
    box = chat.locator(".jp-Stdin-input")
    box.wait_for(timeout=WAIT_MS)
    chat.get_by_text("waiting for your answer").first.wait_for(timeout=WAIT_MS)
    shown = chat.inner_text()
    assert "⟨U+202E⟩" in shown and "⟨U+2067⟩" in shown and "⟨U+2066⟩" in shown
    assert 'os.remove("orders.csv")  # ⟨U+2067⟩ done' in shown
    assert "hidden characters, shown as ⟨U+…⟩" in shown
    assert "shown whole above)" in shown  # the question points at it
    box.press("Enter")  # a stray Enter: the box had the focus
    chat.get_by_text("an empty answer is not one of the answers").first.wait_for(
        timeout=WAIT_MS)
    assert (lab.root / "orders.csv").exists()  # nothing ran
    again = chat.locator(".jp-Stdin-input").last
    again.wait_for(timeout=WAIT_MS)
    again.fill("n")
    again.press("Enter")
    idle(page)
    assert "not run: you declined" in chat.inner_text()
    page_text = page.evaluate("() => document.body.innerText")
    assert not any(ch in page_text for ch in RAW), [hex(ord(c)) for c in RAW if c in page_text]
    assert "⟨U+2067⟩" in page_text and (lab.root / "orders.csv").exists()
    page.context.close()
