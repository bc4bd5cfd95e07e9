"""A notebook's conversation survives JupyterLab's first save, in real JupyterLab 4 under
headless Chromium: a notebook made from the launcher is `Untitled.ipynb`; the user chats
in it, saves — JupyterLab asks for a name (the "Rename file" dialog) — restarts the
kernel, and the next chat continues the same conversation with the one "continuing"
line: the kernel learns the new name from Jupyter Server, and the saved notebook's chat
outputs name their session. A copy of it (File > Duplicate) starts its own, saying how
to continue the original. The run's JupyterLab and Chromium (this module's folder on it),
and the browser tests' page helpers (tests/real/lab.py); the first cell makes the scripted
session current before it loads nbagent, so no kernel warms the embedded server or imports
litellm."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.real.lab import CELL, POLL_MS, WAIT_MS, Lab, idle, menu, run_cell

pytestmark = pytest.mark.real

SETUP = ("import nbagent\n"
         "from nbagent.testing import ScriptedModel\n"
         "agent = nbagent.current(model=ScriptedModel(default='noted'))\n"
         "%load_ext nbagent")
FIRST = "%chat Which Country has the best Visitor Rating"
SECOND = "%chat and by month"
NAME = "visits by country.ipynb"


def type_cell(page: Any, index: int, code: str) -> None:
    """Put `code` in cell `index` (made below the last one when missing)."""
    cells = page.locator(CELL)
    if cells.count() <= index:
        cells.nth(cells.count() - 1).locator(".jp-InputArea-editor").click()
        page.keyboard.press("Escape")
        page.keyboard.press("b")  # a new cell below, in command mode
        page.wait_for_function(f"() => document.querySelectorAll({json.dumps(CELL)}).length"
                               f" > {index}", timeout=WAIT_MS, polling=POLL_MS)
    cells.nth(index).locator(".jp-InputArea-editor").click()
    page.keyboard.insert_text(code)


def output_of(page: Any, index: int) -> str:
    return str(page.locator(CELL).nth(index).locator(".jp-OutputArea").inner_text())


def sessions_in(path: Path) -> list[str]:
    notebook = json.loads(path.read_text())
    return [o["metadata"]["nbagent"]["session"] for cell in notebook["cells"]
            for o in cell.get("outputs", []) if "nbagent" in o.get("metadata", {})]


def users_in_archive(data: Path, session: str) -> list[str]:
    lines = (data / "sessions" / f"{session}.jsonl").read_text().splitlines()
    return [r["message"]["content"] for r in map(json.loads, lines)
            if r["kind"] == "message" and r["message"]["role"] == "user"]


def restart(page: Any) -> None:
    menu(page, "Kernel", "Restart Kernel…")
    page.locator(".jp-Dialog .jp-mod-accept").click()
    page.wait_for_timeout(1_000)
    idle(page)


def test_a_notebook_renamed_at_its_first_save_continues_after_a_restart(
        browser: Any, lab: Lab) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 1000})
    page = context.new_page()
    # the module's folder in the file browser: the launcher JupyterLab opens there makes
    # the notebook there
    page.goto(f"{lab.base}/lab/workspaces/{lab.folder}-rename/tree/{lab.folder}"
              f"?reset&token={lab.token}")
    page.locator(".jp-LauncherCard[data-category='Notebook']").first.click(timeout=WAIT_MS)
    page.locator(CELL).first.wait_for(timeout=WAIT_MS)
    idle(page)
    untitled = lab.root / "Untitled.ipynb"
    assert untitled.is_file()
    for index, code in enumerate((SETUP, FIRST, SECOND)):
        type_cell(page, index, code)
    run_cell(page, 0)
    run_cell(page, 1)
    assert "noted" in output_of(page, 1)

    page.keyboard.press("Escape")
    page.keyboard.press("Control+s")  # the first save: JupyterLab asks for a name
    dialog = page.locator(".jp-Dialog")
    dialog.wait_for(timeout=WAIT_MS)
    assert "Rename file" in dialog.inner_text()
    field = dialog.locator("input[type='text'], input:not([type])").first
    field.fill(NAME)
    dialog.locator(".jp-mod-accept").click()
    renamed = lab.root / NAME
    deadline = time.monotonic() + 60
    while not (renamed.is_file() and sessions_in(renamed)):
        assert time.monotonic() < deadline, "the notebook was not saved under its new name"
        time.sleep(0.1)
    assert not untitled.exists()
    session = sessions_in(renamed)[0]

    restart(page)
    run_cell(page, 0)
    run_cell(page, 2)
    shown = output_of(page, 2)
    assert shown.count("continuing this notebook's conversation") == 1, shown
    assert f"session {session}, which it had as Untitled.ipynb" in shown, shown
    assert "%chat --new" in shown  # the magic that starts fresh, in notebook words
    assert lab.data is not None
    assert users_in_archive(lab.data, session) == [FIRST.removeprefix("%chat "),
                                               SECOND.removeprefix("%chat ")]

    # a copy of the saved notebook, opened while the original claims the conversation
    page.keyboard.press("Escape")
    page.keyboard.press("Control+s")
    deadline = time.monotonic() + 60
    while sessions_in(renamed).count(session) < 2:  # both chat cells' lines, saved
        assert time.monotonic() < deadline, "the notebook was not saved"
        time.sleep(0.1)
    copy = lab.root / "visits copy.ipynb"
    copy.write_bytes(renamed.read_bytes())
    other = context.new_page()
    other.goto(lab.url(copy.name, "copy"))
    other.locator(CELL).first.wait_for(timeout=WAIT_MS)
    idle(other)
    run_cell(other, 0)
    run_cell(other, 2)
    said = output_of(other, 2)
    assert "this notebook is a copy of visits by country.ipynb" in said, said
    assert f"%chat --resume {session}" in said and "continuing" not in said, said
    context.close()
