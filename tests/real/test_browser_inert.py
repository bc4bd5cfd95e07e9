"""Text from the model is inert in real JupyterLab (headless Chromium): a reply carrying a broad
set of payloads (handlers on many tags, script, iframe, SVG, links, style, entity-encoded and
code-fence-breaking variants), streamed word by word, runs no script — a page-level flag stays
unset — while it streams, once drawn with every element hovered and focused, and after the
notebook is saved and reloaded; a control output of raw HTML in the same notebook proves the
page does run handlers of trusted outputs. A reply of ordinary Markdown renders headings, a
table, a code block with a working copy button, inline code, typeset math and a link."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.notebook.test_render import PAYLOADS
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
SHOTS = Path(__file__).parents[2] / "build" / "screenshots"

# Every payload's script sets a flag on the top page (an iframe's too, through `top`).
HOSTILE = "\n\n".join(PAYLOADS.values()).replace("alert(1)", "top.__pwned=1").replace(
    "alert(2)", "top.__pwned=2").replace("msgbox(1)", "top.__pwned=3")
MODEL = '''\
import json, time
import nbagent
from nbagent.testing import ScriptedModel, reply

class Dripping(ScriptedModel):
    """Streams each word 12 ms apart, so the page draws the reply half-written many times."""
    def complete(self, messages, tools, *, on_text, tool_choice=None):
        def drip(delta):
            time.sleep(0.012)
            on_text(delta)
        return super().complete(messages, tools, on_text=drip if on_text else None,
                                tool_choice=tool_choice)

agent = nbagent.new_session(model=Dripping(default=reply(json.loads({text!r}))),
                            settings=nbagent.Settings(max_context_tokens=32768))
'''
CONTROL = ("from IPython.display import HTML\n"
           "HTML('<img src=\"data:,\" onerror=\"top.__control=1\"><i>control</i>')")
ORDINARY = """\
# Sales by region

## What I did

I grouped `sales` by `region` with [pandas](https://pandas.pydata.org/docs/):

| region | revenue |
|:--|--:|
| north | 1,200 |
| south | 950 |

```python
totals = sales.groupby("region").revenue.sum()
```

The mean is $\\bar{x} = \\frac{1}{n}\\sum_i x_i$ and

$$
\\sigma^2 = \\frac{1}{n}\\sum_i (x_i - \\bar{x})^2
$$
"""
FLAGS_JS = "() => [window.__pwned ?? null, window.__control ?? null]"
INSPECT_JS = """() => {
  const found = [];
  for (const el of document.querySelectorAll('.nbagent-reply *')) {
    const ours = el.matches('button.nbagent-copy');
    for (const attr of el.attributes) {
      if (attr.name.startsWith('on') && !ours) found.push(el.tagName + ' ' + attr.name);
      if (['href', 'src', 'action', 'formaction', 'srcdoc', 'data'].includes(attr.name)
          && !(el.tagName === 'A' && /^(https?:|mailto:|[^:]*$)/i.test(attr.value)))
        found.push(el.tagName + ' ' + attr.name + '=' + attr.value);
    }
    if (!el.closest('mjx-container') && /^(SCRIPT|IFRAME|OBJECT|EMBED|FORM|STYLE|SVG|MATH|IMG|VIDEO|AUDIO|INPUT|BASE|META|LINK)$/i
        .test(el.tagName)) found.push(el.tagName);
    for (const kind of ['mouseover', 'mouseenter', 'focus', 'toggle', 'load', 'error'])
      el.dispatchEvent(new Event(kind));
  }
  return found;
}"""


def test_a_hostile_reply_runs_no_script_streaming_drawn_or_reloaded(
        browser: Any, lab: Lab) -> None:
    path = lab.root / "hostile.ipynb"
    notebook(path, MODEL.format(text=json.dumps(HOSTILE)), "%load_ext nbagent", CONTROL,
             "%%chat\nsummarise the file")
    page = open_notebook(browser, lab, path.name, "hostile")
    for index in range(3):
        run_cell(page, index)
    page.wait_for_function("() => window.__control === 1",  # handlers run
                           timeout=WAIT_MS, polling=POLL_MS)
    run_cell(page, 3, wait=False)
    flags: list[Any] = []
    deadline = time.monotonic() + WAIT_MS / 1000
    while "[*]" in page.locator(".jp-Notebook .jp-Cell").nth(3).locator(
            ".jp-InputPrompt").inner_text() and time.monotonic() < deadline:
        flags.append(page.evaluate(FLAGS_JS)[0])  # while the reply is half-written
        page.wait_for_timeout(50)
    idle(page)
    assert len(flags) >= 5 and set(flags) == {None}, flags
    reply = page.locator(".nbagent-reply").last
    assert "top.__pwned=1" in reply.inner_text()  # the payloads show as text
    assert page.evaluate(INSPECT_JS) == []
    reply.hover()
    page.wait_for_timeout(1_000)
    assert page.evaluate(FLAGS_JS) == [None, 1]

    save(page, path, "nbagent-reply")
    reload(page)
    assert page.locator(".nbagent-reply").count() == 1
    page.wait_for_function("() => window.__control === 1",  # still trusted
                           timeout=WAIT_MS, polling=POLL_MS)
    assert page.evaluate(INSPECT_JS) == []
    page.wait_for_timeout(500)
    assert page.evaluate(FLAGS_JS) == [None, 1]
    page.context.close()


def test_an_ordinary_reply_renders_as_markdown_with_a_working_copy_button(
        browser: Any, lab: Lab) -> None:
    path = lab.root / "ordinary.ipynb"
    notebook(path, MODEL.format(text=json.dumps(ORDINARY)), "%load_ext nbagent",
             "%%chat\nrevenue by region?")
    page = open_notebook(browser, lab, path.name, "ordinary")
    for index in range(3):
        run_cell(page, index)
    reply = page.locator(".nbagent-reply").last
    assert reply.locator("h1").inner_text().strip() == "Sales by region"
    assert reply.locator("h2").inner_text().strip() == "What I did"
    assert reply.locator("table tbody tr").count() == 2
    assert reply.locator("td").nth(1).evaluate("e => getComputedStyle(e).textAlign") == "right"
    assert reply.locator("p code").first.inner_text() == "sales"
    link = reply.locator("a", has_text="pandas")
    assert link.get_attribute("href") == "https://pandas.pydata.org/docs/"
    assert reply.locator("pre").inner_text().strip() == (
        'totals = sales.groupby("region").revenue.sum()')
    reply.locator("mjx-container").nth(1).wait_for(timeout=WAIT_MS)  # typeset by MathJax
    assert reply.locator("mjx-container[display='true']").count() == 1
    button = reply.locator(".nbagent-copy")
    button.click()
    page.wait_for_function("() => document.querySelector('.nbagent-copy').textContent "
                           "=== 'copied'", timeout=10_000)
    assert page.evaluate("navigator.clipboard.readText()") == (
        'totals = sales.groupby("region").revenue.sum()')
    SHOTS.mkdir(parents=True, exist_ok=True)
    reply.screenshot(path=str(SHOTS / "ordinary-reply.png"))

    save(page, path, "nbagent-reply")
    reload(page)
    again = page.locator(".nbagent-reply").last
    again.locator("mjx-container").nth(1).wait_for(timeout=WAIT_MS)
    assert again.locator("table tbody tr").count() == 2 and again.locator(".nbagent-copy").count()
    page.context.close()
