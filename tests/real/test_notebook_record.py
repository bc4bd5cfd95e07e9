"""A saved notebook is a record, in real JupyterLab 4 under headless Chromium: three chat
cells with a pin, a compaction and a chat from Python code between them, run one by one;
after save → kernel shut down → reload, each chat cell's meter line shows the numbers of
its own turn (what it showed when its cell finished), not the newest state. JupyterLab,
Chromium and the page helpers are the browser tests' (tests/real/lab.py); this module's
chats have a 16K window and the dark theme."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.real.lab import (
    CELL,
    LINE,
    WAIT_MS,
    Lab,
    menu,
    notebook,
    open_notebook,
    reload,
    run_cell,
    save,
)

pytestmark = pytest.mark.real

SESSION = '''\
import nbagent
from nbagent.compaction import SECTIONS
from nbagent.testing import ScriptedModel, ScriptedSummarizer, reply

SUMMARY = "\\n\\n".join(f"## {n}. {title}\\nkept" for n, title in enumerate(SECTIONS, 1))
answers = [reply("The orders table has " + "forty rows and eight columns, " * 12),
           reply("Customers: " + "a long description of a column, " * 60),
           reply("Returns are small."),
           reply("From Python: " + "more words about inventory, " * 40)]
agent = nbagent.new_session(model=ScriptedModel(answers),
                            summarize=ScriptedSummarizer(default=SUMMARY),
                            settings=nbagent.Settings(max_context_tokens=16_384))
'''
CELLS = (
    SESSION,
    "%load_ext nbagent",
    "%%chat\nWhat is in the orders table?",  # 2
    "%%chat\nDescribe the customers table, every column.",  # 3
    "%pin the target column is churn_30d",  # 4
    "%compact keep the column names",  # 5
    "%%chat\nAnd the returns?",  # 6
    "_ = agent.chat('and the inventory, from Python?')",  # 7
)
CHATS = (2, 3, 6)


def tokens(text: str) -> int:
    found = re.search(r"([\d,]+) tokens", text)
    assert found is not None, text
    return int(found.group(1).replace(",", ""))


def meter_of(page: Any, index: int) -> str:
    line = page.locator(CELL).nth(index).locator(LINE)
    line.wait_for(timeout=WAIT_MS)
    return " ".join(line.inner_text().split())


def test_each_chat_cell_keeps_the_meter_of_its_turn_after_save_and_reload(
        browser: Any, lab: Lab) -> None:
    notebook(lab.root / "record.ipynb", *CELLS)
    page = open_notebook(browser, lab, "record.ipynb", "record")
    menu(page, "Settings", "Theme", "JupyterLab Dark")
    at_turn_end: dict[int, str] = {}
    for index in range(len(CELLS)):
        run_cell(page, index)
        if index in CHATS:
            at_turn_end[index] = meter_of(page, index)
    live = meter_of(page, CHATS[-1])  # the newest line followed the chat from Python
    assert tokens(live) > tokens(at_turn_end[CHATS[-1]])
    for index in CHATS[:-1]:
        assert meter_of(page, index) == at_turn_end[index]  # back to its own turn
    assert "last compaction" not in at_turn_end[2] + at_turn_end[3]
    assert "last compaction L" in at_turn_end[6]
    assert len({tokens(at_turn_end[i]) for i in CHATS}) == 3
    for text in at_turn_end.values():
        assert re.match(r"\d+% context left until auto-compact ● \w[\w ]* [\d,]+ tokens · "
                        r"auto-compact at 13,\d{3}", text), text

    save(page, lab.root / "record.ipynb", "last compaction L")  # the last chat cell's line
    reload(page, len(CELLS))
    reloaded = {index: meter_of(page, index) for index in CHATS}
    assert reloaded == {**at_turn_end, CHATS[-1]: live}
    assert "model not found" not in page.locator(".jp-Notebook").inner_text()
    page.context.close()
