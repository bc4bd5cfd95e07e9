"""What the model's code displays is inert in real JupyterLab (headless Chromium): an
approved run shows a DataFrame whose cells and column names carry payloads, as a table and
as a pandas Styler (which writes cell values into its HTML unescaped), and display objects
of every kind (`HTML`, `Markdown`, `SVG`, `Javascript`, `Latex`, a `_repr_html_`, a raw
bundle, the replies' payloads as HTML and Markdown). No payload runs — a page-level flag
stays unset — once drawn with every element hovered and focused, and after save and
reload; a control output of raw HTML in the same notebook proves the page runs handlers of
trusted outputs. The table still shows, its payloads as text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.notebook.test_code_runs import HOSTILE_RUN
from tests.real import lab as shared
from tests.real.lab import POLL_MS, WAIT_MS, Lab, notebook, open_notebook, reload, run_cell, save

chromium, browser, lab = shared.chromium, shared.browser, shared.serving("lab")
pytestmark = pytest.mark.real
SHOTS = Path(__file__).parents[2] / "build" / "screenshots"

SESSION = f'''\
import nbagent
from nbagent.testing import ScriptedModel, calls, reply
model = ScriptedModel([calls(("run_code", {{"code": {HOSTILE_RUN!r},
                                            "explanation": "show the imported table"}})),
                       reply("Shown.")])
agent = nbagent.new_session(model=model, settings=nbagent.Settings(
    max_context_tokens=32_000, run_code="auto"))
'''
CONTROL = ("from IPython.display import HTML\n"
           "HTML('<img src=\"data:,\" onerror=\"top.__control=1\"><i>control</i>')")
FLAGS_JS = "() => [window.__pwned ?? null, window.__control ?? null]"
POKE_JS = """(cell) => {
  const found = [];
  for (const el of document.querySelectorAll('.jp-Notebook .jp-Cell')[cell]
                            .querySelectorAll('.jp-OutputArea-output *')) {
    for (const attr of el.attributes)
      if (attr.name.startsWith('on')) found.push(el.tagName + ' ' + attr.name);
    if (/^(SCRIPT|IFRAME|OBJECT|EMBED|FORM|BASE|META|LINK|SVG)$/i.test(el.tagName)
        && !el.closest('mjx-container')) found.push(el.tagName);
    for (const kind of ['mouseover', 'mouseenter', 'focus', 'click', 'load', 'error'])
      el.dispatchEvent(new Event(kind));
  }
  return found;
}"""


def test_everything_an_agent_run_displays_runs_no_script_drawn_or_reloaded(
        browser: Any, lab: Lab) -> None:
    path = lab.root / "imported.ipynb"
    notebook(path, SESSION, "%load_ext nbagent", CONTROL, "%%chat\nshow the imported table")
    page = open_notebook(browser, lab, path.name, "run-inert")
    for index in range(4):
        run_cell(page, index)
    page.wait_for_function("() => window.__control === 1",  # handlers run
                           timeout=WAIT_MS, polling=POLL_MS)
    chat = page.locator(".jp-Notebook .jp-Cell").nth(3)
    chat.locator(".jp-OutputArea-output table").first.wait_for(timeout=WAIT_MS)
    assert "Shown." in chat.inner_text()
    table = chat.locator(".jp-OutputArea-output table").first
    assert '<img src=x onerror="top.__pwned=1">' in table.inner_text()  # the payload: text
    assert page.evaluate(POKE_JS, 3) == []
    chat.hover()
    page.wait_for_timeout(1_000)
    assert page.evaluate(FLAGS_JS) == [None, 1]
    SHOTS.mkdir(parents=True, exist_ok=True)
    table.screenshot(path=str(SHOTS / "run-inert-table.png"))

    save(page, path, "top.__pwned=1")
    reload(page)
    page.wait_for_function("() => window.__control === 1",  # still trusted
                           timeout=WAIT_MS, polling=POLL_MS)
    again = page.locator(".jp-Notebook .jp-Cell").nth(3)
    again.locator(".jp-OutputArea-output table").first.wait_for(timeout=WAIT_MS)
    assert page.evaluate(POKE_JS, 3) == []
    page.wait_for_timeout(500)
    assert page.evaluate(FLAGS_JS) == [None, 1]
    page.context.close()
