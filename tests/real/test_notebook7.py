"""The chat outputs in real Notebook 7 (the `notebook` package's own app, not JupyterLab),
rendered by headless Chromium: two chat cells, each with a tool round, and a pin and a chat
from Python between them, show one clear story — the reply as HTML, one tool line, one meter
line, no waiting line left behind — the first chat cell's meter, moved by the chat from
Python, goes back to its own turn's numbers when the second chat cell runs, and save →
kernel shut down → reload shows the same. A hostile reply runs no script
while it streams, once drawn and hovered, or after a reload. One Notebook 7 server serves the
module; Chromium and the cell helpers are test_browser's."""

from __future__ import annotations

import json
import re
import secrets
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest

from tests.real import test_browser as shared
from tests.real.test_browser import (
    LINE,
    WAIT_MS,
    Lab,
    free_port,
    idle,
    menu,
    notebook,
    open_notebook,
    run_cell,
)
from tests.real.test_browser_inert import CONTROL, FLAGS_JS, HOSTILE, INSPECT_JS, MODEL

chromium, browser = shared.chromium, shared.browser  # module fixtures, used by name
pytestmark = pytest.mark.real
SHOTS = Path(__file__).parents[2] / "build" / "screenshots"
CELL = ".jp-Notebook .jp-Cell"

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
    "%load_ext nbagent",
    SESSION,
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


class Notebook7(Lab):
    """Where Notebook 7 opens a notebook: /notebooks/<name> (it keeps no workspaces)."""

    def url(self, name: str, workspace: str) -> str:
        return f"{self.base}/notebooks/{name}?token={self.token}"


@pytest.fixture(scope="module")
def notebook7(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Notebook7]:
    root = tmp_path_factory.mktemp("nb7")
    settings = tmp_path_factory.mktemp("nb7-settings")
    plugin = settings / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings"
    plugin.parent.mkdir(parents=True)
    plugin.write_text(json.dumps({"fetchNews": "false", "checkForUpdates": False}))
    port, token = free_port(), secrets.token_hex(16)
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyter", "notebook", "--no-browser", "--ip=127.0.0.1",
         f"--port={port}", f"--IdentityProvider.token={token}",
         f"--ServerApp.root_dir={root}", "--allow-root",
         f"--JupyterNotebookApp.user_settings_dir={settings}",
         f"--JupyterNotebookApp.workspaces_dir={tmp_path_factory.mktemp('nb7-workspaces')}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2)
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise RuntimeError("Notebook 7 did not start") from None
                time.sleep(0.5)
        yield Notebook7(base, token, root)
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()


def run(page: Any, index: int, *, wait: bool = True) -> Any:
    """test_browser's run_cell (which retries the scroll Notebook 7's redraws can break)."""
    return run_cell(page, index, wait=wait)


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
    page.keyboard.press("Control+s")
    deadline = time.monotonic() + 60
    while needle not in path.read_text():
        assert time.monotonic() < deadline, "the notebook was not saved"
        time.sleep(0.5)
    menu(page, "Kernel", "Shut Down Kernel")
    page.wait_for_timeout(1_000)
    page.reload()
    page.locator(CELL).first.wait_for(timeout=WAIT_MS)
    idle(page)
    page.wait_for_function(f"(n) => document.querySelectorAll({json.dumps(CELL)}).length === n",
                           arg=cells, timeout=WAIT_MS)
    page.wait_for_timeout(1_500)  # outputs drawn (and any handler they carry fired)


def test_two_chats_tell_one_story_in_notebook7_and_keep_it_after_reload(
        browser: Any, notebook7: Notebook7) -> None:
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
                                   arg=at_turn_end[2]["meters"][0], timeout=WAIT_MS)
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
    saved = nbformat.read(path, as_version=4)
    assert all(saved.cells[i].outputs for i in CHATS)
    assert {index: story(page, index) for index in CHATS} == at_turn_end
    for index, (_, tag, word) in CHATS.items():
        assert emphasised(page, index, tag) == word
    assert "Error displaying" not in page.locator(".jp-Notebook").inner_text()
    page.context.close()


def test_a_hostile_reply_runs_no_script_in_notebook7(
        browser: Any, notebook7: Notebook7) -> None:
    path = notebook7.root / "hostile.ipynb"
    # The reply streams a few words at a time (the JupyterLab test's dripping model).
    notebook(path, "%load_ext nbagent", MODEL.format(text=json.dumps(PAYLOADS)),
             CONTROL, "%%chat\nsummarise the report")
    page = open_notebook(browser, notebook7, path.name, "")
    for index in range(3):
        run(page, index)
    page.wait_for_function("() => window.__control === 1", timeout=WAIT_MS)  # handlers run
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
    page.wait_for_function("() => window.__control === 1", timeout=WAIT_MS)  # still trusted
    assert page.evaluate(INSPECT_JS) == []
    assert page.evaluate(FLAGS_JS) == [None, 1]
    page.context.close()
