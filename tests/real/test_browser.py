"""The notebook parts in real JupyterLab 4, rendered by headless Chromium (Debian's, driven
by Playwright): the meter line in the light and dark themes, live while a chat runs and
unchanged after run → save → restart → reload (no widget error: JupyterLab saves no
widget state by default), the interactive meter of `%nbagent meter`, a reply that
streams, copy buttons, a proposed cell that lands below the chat cell and runs, re-run
cells and interrupts. The run's JupyterLab (127.0.0.1, with a token) serves this module's
notebooks from a folder of its own (tests/real/lab.py)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.real import lab as shared
from tests.real.lab import (
    LINE,
    POLL_MS,
    WAIT_MS,
    Lab,
    idle,
    menu,
    notebook,
    open_notebook,
    reload,
    run_cell,
    save,
)

pytestmark = pytest.mark.real
ROOT = Path(__file__).parents[2]
SCREENSHOT = ROOT / "docs" / "meter-in-jupyterlab.png"
SCREENSHOT_DARK = ROOT / "docs" / "meter-in-jupyterlab-dark.png"
WIDGET = ".nbagent-meter"  # the meter drawn by the widget's own code (not a fallback copy)

SLOW_MODEL = '''\
import time
import nbagent
from nbagent.testing import ScriptedModel, reply

class SlowModel(ScriptedModel):
    """Streams each word 20 ms apart, as a provider does; a message ending "slowly" makes
    it think 60 s. (Not one holding it: the first chat's message may carry the note of the
    cells run before it, and would sleep 60 s for nothing.)"""
    def complete(self, messages, tools, *, on_text, tool_choice=None):
        if str(messages[-1].get("content")).endswith("slowly"):
            time.sleep(60)
        def drip(delta):
            time.sleep(0.02)
            on_text(delta)
        return super().complete(messages, tools, on_text=drip if on_text else None,
                                tool_choice=tool_choice)

ANSWER = " ".join(f"w{i}" for i in range(WORDS)) + "\\n\\n```python\\nprint('copied')\\n```\\n"
agent = nbagent.new_session(model=SlowModel(default=reply(ANSWER)),
                            settings=nbagent.Settings(max_context_tokens=8192))
'''
# The streaming test's reply is long enough to be seen half-written (150 words, 3 s); a
# test that only needs a reply gets a short one (each word is a redraw in the kernel and
# the browser).
STREAMED, SHORT = 150, 20


def slow_model(words: int) -> str:
    """The notebook cell that makes the slow model, its reply `words` words long (the last
    one `w{words - 1}`) and a code block."""
    return SLOW_MODEL.replace("WORDS", str(words))


# A turn whose count falls underneath (each usage reads two thirds of what nbagent counts:
# the count recalibrates down at each round): its meter line must still only rise.
FALLING_COUNT = '''\
from nbagent import Usage, tool

@tool
def add(a: int, b: int) -> int:
    """Add two numbers.

    Args:
        a: the first.
        b: the second.
    """
    return a + b

rounds = [calls(("add", {"a": 1, "b": 2}), usage=Usage(1_000, 10)),
          calls(("add", {"a": 3, "b": 4}), usage=Usage(1_040, 10)),
          reply("1+2=3 and 3+4=7.", usage=Usage(1_080, 12))]
agent = nbagent.new_session(model=ScriptedModel(rounds, name="gpt-4o-mini"), tools=[add],
                            builtin_tools=False, system="You answer about the data. " * 160,
                            settings=nbagent.Settings(max_context_tokens=8192))
'''
# every figure the chat cell's meter line shows, as the page draws it
WATCH_FIGURES = """(index) => {
  window.figures = [];
  const read = () => {
    const line = document.querySelectorAll('.jp-Notebook .jp-Cell')[index]
      ?.querySelector(SELECTOR);
    const found = line && /([\\d,]+) tokens/.exec(line.textContent);
    const figure = found && Number(found[1].replace(/,/g, ''));
    if (figure && figure !== window.figures[window.figures.length - 1])
      window.figures.push(figure);
  };
  new MutationObserver(read).observe(document.querySelector('.jp-Notebook'),
    {subtree: true, childList: true, characterData: true});
}""".replace("SELECTOR", json.dumps(LINE))


PROPOSING_MODEL = '''\
import nbagent
from nbagent.testing import ScriptedModel, reply

CODE = "answer = 6 * 7\\nprint('from the proposed cell', answer)"
agent = nbagent.new_session(model=ScriptedModel(default=reply(f"Run this:\\n\\n```python\\n{CODE}\\n```\\n")),
                            settings=nbagent.Settings(max_context_tokens=8192))
'''


def write_notebooks(root: Path) -> None:
    """The quickstart and this module's notebooks, in the folder JupyterLab serves."""
    shutil.copy(ROOT / "examples" / "quickstart.ipynb", root)
    notebook(root / "widget.ipynb", slow_model(SHORT), "%load_ext nbagent", "%%chat\nhello",
             "%nbagent meter")  # the interactive meter, an extra
    notebook(root / "stream.ipynb", slow_model(STREAMED), "%load_ext nbagent",
             "%%chat\nstream please",
             "from nbagent.widgets import MeterLine\ndisplay(MeterLine.follow(agent))",
             "from nbagent.testing import calls\n" + FALLING_COUNT, "%%chat\nadd some numbers")
    notebook(root / "propose.ipynb", PROPOSING_MODEL, "%load_ext nbagent",
             "%%chat --cell\nshow me the answer as code")
    notebook(root / "follow.ipynb",
             "import nbagent\nfrom nbagent.testing import ScriptedModel\n"
             "agent = nbagent.current(model=ScriptedModel(default='noted'))",
             "%load_ext nbagent",
             "%%chat\nremember that the target column is churn_30d",
             'print("asked:", [m["content"] for m in nbagent.current().history\n'
             '                 if m["role"] == "user"])')
    notebook(
        root / "cells.ipynb",
        slow_model(SHORT),
        "%load_ext nbagent",
        "%%chat\nhello",
        "%%chat\nanswer slowly",
        "%%chat\nafter the interrupt",
        # the user's own words: the first chat's message may also carry the note of the
        # cells run before it, and a re-run sends that note again
        'print("hello asked", [m["content"].rsplit("\\n\\n", 1)[-1]\n'
        '                      for m in nbagent.current().history\n'
        '                      if m["role"] == "user"].count("hello"), "times")',
    )


# The kernels that import litellm (tests.real.lab.notebook): the quickstart's, which loads
# first and picks its model after, as a user does; the streaming notebook's, whose
# falling-count turn is on a stand-in named after a real model (litellm is asked about it).
lab = shared.serving("lab", write_notebooks, litellm=("quickstart.ipynb", "stream.ipynb"))


def _rgba(colour: str) -> tuple[float, float, float, float]:
    parts = [float(x) for x in re.findall(r"[\d.]+", colour)]
    return parts[0], parts[1], parts[2], parts[3] if len(parts) > 3 else 1.0


def _luminance(rgb: tuple[float, float, float]) -> float:
    def channel(value: float) -> float:
        value /= 255
        return value / 12.92 if value <= 0.04045 else ((value + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(v) for v in rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(foreground: str, background: str) -> float:
    """WCAG contrast of a (possibly translucent) text colour over its background."""
    fr, fg, fb, alpha = _rgba(foreground)
    br, bg, bb, _ = _rgba(background)
    blended = (fr * alpha + br * (1 - alpha), fg * alpha + bg * (1 - alpha),
               fb * alpha + bb * (1 - alpha))
    light, dark = sorted((_luminance(blended), _luminance((br, bg, bb))), reverse=True)
    return (light + 0.05) / (dark + 0.05)


COLOURS_JS = """(el) => {
  let node = el, background = null;
  while (node && !background) {
    const colour = getComputedStyle(node).backgroundColor;
    if (colour && colour !== "transparent" && !/rgba\\(.*, 0\\)$/.test(colour)) background = colour;
    node = node.parentElement;
  }
  return [getComputedStyle(el).color, background || "rgb(255, 255, 255)"];
}"""


def text_contrasts(page: Any, scope: str) -> dict[str, float]:
    found: dict[str, float] = {}
    for part in (".nbagent-meter-text", ".nbagent-meter-status", ".nbagent-meter-detail"):
        element = page.locator(f"{scope} {part}").first
        foreground, background = element.evaluate(COLOURS_JS)
        found[part] = contrast(foreground, background)
    return found


def test_the_meter_in_jupyterlab_light_and_dark_then_saved_restarted_and_reloaded(
        browser: Any, lab: Lab) -> None:
    page = open_notebook(browser, lab, "quickstart.ipynb", "meter")
    import nbformat  # here, not at collection: its schema validator takes seconds to import
    source = nbformat.read(ROOT / "examples" / "quickstart.ipynb", as_version=4)
    compact_cell = next(i for i, c in enumerate(source.cells) if c.source.startswith("%compact"))
    code = [i for i, c in enumerate(source.cells) if c.cell_type == "code"]
    cells = page.locator(".jp-Notebook .jp-Cell")
    # Each code cell run and waited for in turn (not Run > Run All Above, which under load
    # could run nothing — a click that selected no cell, JupyterLab's "Select Kernel"
    # question — and left the test waiting its whole 120 s for a tool line)
    for index in (i for i in code if i < compact_cell):
        run_cell(page, index)
    page.locator(".nbagent-tool").nth(1).wait_for(timeout=WAIT_MS)
    meter = page.locator(LINE).last
    meter.wait_for(timeout=WAIT_MS)
    before = meter.inner_text()
    assert re.search(r"\d+% context left", before)
    level = meter.get_attribute("data-level")
    words = {"ok": "ok", "warning": "warning", "error": "compacting soon",
             "compact": "compacting", "blocking": "compacting at the next chat"}[level]
    assert words in meter.locator(".nbagent-meter-status").inner_text()
    assert "last compaction" not in before
    assert page.locator(WIDGET).count() == 0  # chat cells hold no widget

    for index in (i for i in code if i >= compact_cell):
        run_cell(page, index)
    page.locator(".nbagent-compaction").first.wait_for(timeout=WAIT_MS)
    page.wait_for_function(
        f"() => {{ const l = [...document.querySelectorAll({json.dumps(LINE)})];"
        " return l.length > 2 && l[l.length - 1].textContent.includes('last compaction'); }",
        timeout=WAIT_MS, polling=POLL_MS)
    idle(page)
    lines = page.locator(LINE)
    after = lines.last.inner_text()  # the %compact cell's own line
    assert after != before and "last compaction L" in after  # e.g. "L2 memory: 1,778 → 1,241"
    texts = [lines.nth(i).inner_text() for i in range(lines.count())]
    assert texts[-2] == before and not any("last compaction" in t for t in texts[:-1])
    assert "compacted (L" in page.locator(".nbagent-compaction").first.inner_text()
    light = text_contrasts(page, ".jp-OutputArea-output")
    assert min(light.values()) >= 4.5, light
    top = cells.nth(compact_cell - 2)  # the second chat, its tool lines and its meter
    top.evaluate("e => e.scrollIntoView({block: 'start'})")
    page.screenshot(path=str(SCREENSHOT))

    menu(page, "Settings", "Theme", "JupyterLab Dark")
    page.wait_for_function("() => document.body.dataset.jpThemeLight === 'false'",
                           timeout=WAIT_MS, polling=POLL_MS)
    page.wait_for_timeout(500)  # the theme's stylesheet applies
    dark = text_contrasts(page, ".jp-OutputArea-output")
    assert min(dark.values()) >= 4.5, dark
    track = page.locator(f"{LINE} .nbagent-meter-track").last.evaluate(
        "e => getComputedStyle(e).backgroundColor")
    assert _luminance(_rgba(track)[:3]) < 0.2  # a dark track, not a glaring light one
    top.evaluate("e => e.scrollIntoView({block: 'start'})")
    page.screenshot(path=str(SCREENSHOT_DARK))
    menu(page, "Settings", "Theme", "JupyterLab Light")

    # The everyday round trip: save, restart the kernel, reload the page.
    saved = lab.root / "quickstart.ipynb"
    save(page, saved, "last compaction L")
    assert "application/vnd.jupyter.widget-view+json" not in saved.read_text()
    reload(page)
    reloaded = page.locator(LINE)
    reloaded.last.wait_for(timeout=WAIT_MS)
    reloaded.last.scroll_into_view_if_needed()
    assert reloaded.last.inner_text() == after  # exactly as it was, with no kernel state
    assert reloaded.count() == lines.count()
    notebook_text = page.locator(".jp-Notebook").inner_text()
    assert "model not found" not in notebook_text and "Error displaying widget" not in (
        notebook_text)
    page.context.close()

    from nbconvert import HTMLExporter  # `jupyter nbconvert --to html`'s exporter

    exported, _ = HTMLExporter().from_filename(str(saved))
    assert "context left" in exported and "last compaction L" in exported  # nbviewer, GitHub


def test_the_interactive_meter_of_nbagent_meter(browser: Any, lab: Lab) -> None:
    page = open_notebook(browser, lab, "widget.ipynb", "widget")
    for index in range(3):
        run_cell(page, index)
    drawn = run_cell(page, 3).locator(f"{WIDGET} .nbagent-meter-body")
    drawn.wait_for(timeout=WAIT_MS)
    page.wait_for_function(
        "() => [...document.querySelectorAll('.nbagent-meter .nbagent-meter-body')]"
        ".some(e => /[1-9][\\d,]* tokens · auto-compact at 6,841/.test(e.textContent))",
        timeout=WAIT_MS, polling=POLL_MS)
    assert re.search(r"\d+% context left", drawn.inner_text())
    # The plain-HTML copy shown with the widget is hidden where the widget draws.
    fallback = page.locator(".nbagent-meter-fallback").last
    assert fallback.count() == 1 and not fallback.is_visible()
    assert min(text_contrasts(page, WIDGET).values()) >= 4.5
    page.context.close()


def test_a_proposed_cell_lands_below_the_chat_cell_and_runs(browser: Any, lab: Lab) -> None:
    page = open_notebook(browser, lab, "propose.ipynb", "propose")
    run_cell(page, 0)
    run_cell(page, 1)
    chat = run_cell(page, 2)
    assert "proposed a new cell below" in chat.locator(".jp-OutputArea").inner_text()
    cells = page.locator(".jp-Notebook .jp-Cell")
    page.wait_for_function("() => document.querySelectorAll('.jp-Notebook .jp-Cell').length "
                           "=== 4", timeout=WAIT_MS, polling=POLL_MS)
    new = cells.nth(3)
    code = new.locator(".jp-InputArea-editor").inner_text()
    assert code.splitlines() == ["answer = 6 * 7", "print('from the proposed cell', answer)"]
    assert "[" not in new.locator(".jp-InputPrompt").inner_text().replace("[ ]", "")  # not run
    assert new.locator(".jp-OutputArea-output").count() == 0
    ran = run_cell(page, 3)
    assert "from the proposed cell 42" in ran.locator(".jp-OutputArea").inner_text()
    page.context.close()


def test_a_reopened_notebook_continues_its_conversation(browser: Any, lab: Lab) -> None:
    page = open_notebook(browser, lab, "follow.ipynb", "follow")
    for index in (0, 1, 2):
        run_cell(page, index)
    page.keyboard.press("Control+s")
    reload(page, cells=4)  # the notebook reopened, its kernel new: Jupyter Server names it
    for index in (0, 1):
        run_cell(page, index)
    asked = run_cell(page, 3).locator(".jp-OutputArea").inner_text()
    assert "remember that the target column is churn_30d" in asked, asked
    page.context.close()


def test_a_reply_streams_before_it_ends_and_its_code_can_be_copied(
    browser: Any, lab: Lab
) -> None:
    page = open_notebook(browser, lab, "stream.ipynb", "stream")
    run_cell(page, 0)
    run_cell(page, 1)
    run_cell(page, 2, wait=False)
    partial = page.wait_for_function(
        "() => { const t = document.querySelector('.jp-Notebook').innerText;"
        " return t.includes('w20') ? t : null; }", timeout=WAIT_MS, polling=50).json_value()
    last = f"w{STREAMED - 1}"
    assert last not in partial  # text showed while the reply was still arriving
    running = page.locator(".jp-Notebook .jp-Cell").nth(2)
    assert "context left" in running.locator(LINE).first.inner_text()  # the meter, already
    assert re.search(r"\[\*\]", running.locator(".jp-InputPrompt").inner_text())
    page.wait_for_function(
        "(last) => document.querySelector('.jp-Notebook').innerText.includes(last)",
        arg=last, timeout=WAIT_MS, polling=POLL_MS)
    idle(page)
    button = page.locator(".nbagent-copy").first
    button.click()
    page.wait_for_function("() => document.querySelector('.nbagent-copy').textContent "
                           "=== 'copied'", timeout=10_000)
    assert page.evaluate("navigator.clipboard.readText()") == "print('copied')"
    assert not page.locator(".nbagent-status").filter(has_text="thinking").is_visible()
    line = run_cell(page, 3).locator(".nbagent-meter-body")  # the one-line meter, plain HTML
    assert re.match(r"\d+% context left until auto-compact ● ok [\d,]+ tokens · "
                    r"auto-compact at 6,841$", " ".join(
        line.inner_text().split()))
    assert min(text_contrasts(page, ".jp-Cell:nth-child(4)").values()) >= 4.5
    # a turn whose count falls underneath at each usage: the line the page shows only rises
    run_cell(page, 4)
    page.evaluate(WATCH_FIGURES, 5)
    run_cell(page, 5)
    idle(page)
    figures = page.evaluate("window.figures")
    assert "1+2=3 and 3+4=7." in page.locator(".jp-Notebook .jp-Cell").nth(5).inner_text()
    assert len(figures) >= 2 and figures == sorted(figures), figures
    page.context.close()


def test_a_rerun_cell_keeps_one_exchange_and_an_interrupt_leaves_one_line(
    browser: Any, lab: Lab
) -> None:
    page = open_notebook(browser, lab, "cells.ipynb", "cells")
    for index in (0, 1, 2, 2):  # the "hello" cell twice
        run_cell(page, index)
    slow = run_cell(page, 3, wait=False)
    slow.locator(".nbagent-status").first.wait_for(timeout=WAIT_MS)  # "thinking…"
    menu(page, "Kernel", "Interrupt Kernel")
    idle(page)
    output = slow.locator(".jp-OutputArea").inner_text()
    assert "interrupted — the session is intact" in output
    assert "Traceback" not in output and "KeyboardInterrupt" not in output
    said = [o.inner_text() for o in slow.locator(".jp-OutputArea-output").all()
            if not o.locator(".nbagent-meter-body").count()]
    assert len([line for text in said for line in text.splitlines() if line.strip()]) == 1
    after = run_cell(page, 4)
    # the session still works: the whole reply
    assert f"w{SHORT - 1}" in after.locator(".jp-OutputArea").inner_text()
    count = run_cell(page, 5)
    assert "hello asked 1 times" in count.locator(".jp-OutputArea").inner_text()
    page.context.close()
