"""The chat outputs in real Notebook 7 (the `notebook` package's own app, not JupyterLab),
rendered by headless Chromium: two chat cells, each with a tool round, and a pin and a chat
from Python between them, show one clear story — the reply as HTML, one tool line, one meter
line, no waiting line left behind — the first chat cell's meter, moved by the chat from
Python, goes back to its own turn's numbers when the second chat cell runs, and save →
kernel shut down → reload shows the same. A hostile reply runs no script
while it streams, once drawn and hovered, or after a reload. The run's Notebook 7 server
(`notebook7`: a folder of this module's on it), Chromium and the cell helpers are the browser
tests' (tests/conftest.py, tests/real/lab.py)."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest

from tests.real.lab import (
    CELL,
    LINE,
    POLL_MS,
    WAIT_MS,
    Lab,
    idle,
    notebook,
    open_notebook,
    reload,
    save,
)
from tests.real.lab import run_cell as run
from tests.real.test_browser_inert import CONTROL, FLAGS_JS, HOSTILE, INSPECT_JS, MODEL

pytestmark = pytest.mark.real
SHOTS = Path(__file__).parents[2] / "build" / "screenshots"

SESSION = '''\
import nbagent
from nbagent.testing import ScriptedModel, calls, reply

invoices = [{"number": n, "amount": 12.5 * n, "paid": n % 3 == 0} for n in range(60)]
overdue_days = {"north": 14, "south": 3}
agent = nbagent.new_session(
    model=ScriptedModel([
        calls(("list_variables", {})),
        reply("Two variables: **invoices** (60 rows) and `overdue_days`."),
        reply("North invoices are overdue by " + "fourteen days on average, " * 20),
        calls(("describe_variable", {"name": "invoices"})),
        reply("*invoices* is a list of 60 dicts with keys `number`, `amount` and `paid`; "
              "about a third are paid."),
    ]),
    settings=nbagent.Settings(max_context_tokens=24_576))
'''
CELLS = (
    SESSION,
    "%load_ext nbagent",
    "%%chat\nWhat data do I have loaded?",  # 2
    "%pin amounts are in Swiss francs",
    "_ = agent.chat('Which region is most overdue?')",  # 4: moves the newest line, cell 2's
    "%%chat\nTell me about the invoices.",  # 5
)
CHATS = {2: ("list_variables()", "strong", "invoices"),
         5: ("describe_variable(name='invoices')", "em", "invoices")}
TEXT_OF_LINE_JS = (f"(i) => document.querySelectorAll({json.dumps(CELL)})[i]"
                   f".querySelector({json.dumps(LINE)}).innerText.trim().split(/\\s+/).join(' ')")

# The two payloads of the issue, then every payload the JupyterLab test uses.
PAYLOADS = ('<img src=x onerror="top.__pwned=1">\n\n<script>top.__pwned=1</script>\n\n'
            + HOSTILE)


def story(page: Any, index: int) -> dict[str, Any]:
    """What one chat cell shows: its non-empty outputs' texts, the reply's emphasised word,
    the tool lines, the meter lines and any waiting line."""
    cell = page.locator(CELL).nth(index)
    outputs = [" ".join(o.inner_text().split()) for o in
               cell.locator(".jp-OutputArea-output").all()]
    return {
        "outputs": [text for text in outputs if text],
        "replies": cell.locator(".nbagent-reply").count(),
        "tools": [" ".join(t.inner_text().split()) for t in cell.locator(".nbagent-tool").all()],
        "meters": [" ".join(m.inner_text().split()) for m in cell.locator(LINE).all()],
        "waiting": [s.inner_text() for s in cell.locator(".nbagent-status").all()],
    }


def emphasised(page: Any, index: int, tag: str) -> str:
    reply = page.locator(CELL).nth(index).locator(".nbagent-reply")
    return str(reply.locator(tag).first.inner_text())


def tokens(meter: str) -> int:
    found = re.search(r"([\d,]+) tokens", meter)
    assert found is not None, meter
    return int(found.group(1).replace(",", ""))


def save_and_reload(page: Any, path: Path, cells: int, needle: str) -> None:
    """Save, shut the kernel down, reload the page: what shows now comes from the file."""
    save(page, path, needle)
    reload(page, cells)


def test_two_chats_tell_one_story_in_notebook7_and_keep_it_after_reload(
        browser: Any, notebook7: Lab) -> None:
    path = notebook7.root / "invoices.ipynb"
    notebook(path, *CELLS)
    page = open_notebook(browser, notebook7, path.name, "")
    assert page.locator("#main-panel .jp-NotebookPanel").count() == 1  # Notebook 7's shell
    assert page.locator(".jp-LabShell").count() == 0  # not JupyterLab's
    at_turn_end: dict[int, dict[str, Any]] = {}
    moved = ""
    for index in range(len(CELLS)):
        run(page, index)
        if index in CHATS:
            at_turn_end[index] = story(page, index)
        if index == 4:  # the chat from Python moved the first chat's line, still the newest
            page.wait_for_function(f"(t) => ({TEXT_OF_LINE_JS})(2) !== t",
                                   arg=at_turn_end[2]["meters"][0], timeout=WAIT_MS,
                                   polling=POLL_MS)
            moved = page.evaluate(TEXT_OF_LINE_JS, 2)
            assert tokens(moved) > tokens(at_turn_end[2]["meters"][0]), moved
    for index, (call, tag, word) in CHATS.items():
        told = at_turn_end[index]
        assert told["replies"] == 1 and emphasised(page, index, tag) == word, told
        assert len(told["tools"]) == 1 and told["tools"][0].startswith(call), told
        assert len(told["meters"]) == 1 and told["waiting"] == [], told
        assert re.match(r"\d+% context left until auto-compact ● ok [\d,]+ tokens · "
                        r"auto-compact at 2\d,\d{3}$", told["meters"][0]), told
        assert len(told["outputs"]) == 3, told  # the reply, the tool line, the meter: once
        assert not any(w in " ".join(told["outputs"]) for w in ("thinking", "running")), told
    # The first chat's line shows its own turn again, not the pin's or the second chat's.
    assert story(page, 2) == at_turn_end[2]
    assert tokens(at_turn_end[2]["meters"][0]) < tokens(moved) < tokens(at_turn_end[5]["meters"][0])
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.locator(CELL).nth(2).evaluate("e => e.scrollIntoView({block: 'start'})")
    page.screenshot(path=str(SHOTS / "notebook7-chat.png"))

    save_and_reload(page, path, len(CELLS), "describe_variable")
    import nbformat  # here, not at collection: its schema validator takes seconds to import
    saved = nbformat.read(path, as_version=4)
    assert all(saved.cells[i].outputs for i in CHATS)
    assert {index: story(page, index) for index in CHATS} == at_turn_end
    for index, (_, tag, word) in CHATS.items():
        assert emphasised(page, index, tag) == word
    assert "Error displaying" not in page.locator(".jp-Notebook").inner_text()
    page.context.close()


def test_a_hostile_reply_runs_no_script_in_notebook7(
        browser: Any, notebook7: Lab) -> None:
    path = notebook7.root / "hostile.ipynb"
    # The reply streams a few words at a time (the JupyterLab test's dripping model).
    notebook(path, MODEL.format(text=json.dumps(PAYLOADS)), "%load_ext nbagent",
             CONTROL, "%%chat\nsummarise the report")
    page = open_notebook(browser, notebook7, path.name, "")
    for index in range(3):
        run(page, index)
    page.wait_for_function("() => window.__control === 1",  # handlers run
                           timeout=WAIT_MS, polling=POLL_MS)
    run(page, 3, wait=False)
    flags: list[Any] = []
    deadline = time.monotonic() + WAIT_MS / 1000
    while "[*]" in page.locator(CELL).nth(3).locator(".jp-InputPrompt").inner_text() and (
            time.monotonic() < deadline):
        flags.append(page.evaluate(FLAGS_JS)[0])  # while the reply is drawn
        page.wait_for_timeout(50)
    idle(page)
    assert len(flags) >= 5 and set(flags) == {None}, flags
    reply = page.locator(".nbagent-reply").last
    assert "top.__pwned=1" in reply.inner_text()  # the payloads show as text
    assert page.evaluate(INSPECT_JS) == []
    reply.hover()
    page.wait_for_timeout(1_000)
    assert page.evaluate(FLAGS_JS) == [None, 1]

    save_and_reload(page, path, 4, "nbagent-reply")
    assert page.locator(".nbagent-reply").count() == 1
    page.wait_for_function("() => window.__control === 1",  # still trusted
                           timeout=WAIT_MS, polling=POLL_MS)
    page.wait_for_timeout(500)  # a payload's own late script (an iframe's) gets its chance
    assert page.evaluate(INSPECT_JS) == []
    assert page.evaluate(FLAGS_JS) == [None, 1]
    page.context.close()
