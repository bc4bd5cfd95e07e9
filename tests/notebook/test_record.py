"""A saved notebook is a record: run as cells (IPython's execution count going up), each chat
cell's meter line keeps the state of its own turn once a later cell shows a line; only the
newest follows what happens after its turn. Read back from what a real shell published,
with every update applied as a front end applies it (by display id)."""

from __future__ import annotations

import re

from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output
from nbagent.widgets import ContextMeter

from nbagent.testing import ScriptedModel, ScriptedSummarizer, reply
from tests.helpers import nine_sections
from tests.notebook.helpers import session, shown


def meters(captured: object) -> list[str]:
    """The chat cells' lines (not the widget's plain copy)."""
    html = [(d.get("text/html", ""), d["text/plain"]) for d in shown(captured)]
    return [text for page, text in html
            if "nbagent-meter-body" in page and "nbagent-meter-fallback" not in page]


def tokens(line: str) -> int:
    found = re.search(r"· ([\d,]+) tokens ·", line)
    assert found is not None, line
    return int(found.group(1).replace(",", ""))


def test_each_chat_cell_keeps_the_meter_of_its_own_turn(ip: InteractiveShell) -> None:
    answers = [reply("first answer " * 30), reply("second answer " * 120),
               reply("third answer " * 10), reply("from Python " * 60)]
    agent = session(ScriptedModel(answers), ScriptedSummarizer(default=nine_sections()))
    ends = []
    with capture_output() as captured:
        ip.run_cell("%%chat\nWhat is in the first table?", store_history=True)
        ends.append(agent.context_state().tokens)
        ip.run_cell("%nbagent meter", store_history=True)  # the widget: always live
        ip.run_cell("%%chat\nAnd in the second, in detail?", store_history=True)
        ends.append(agent.context_state().tokens)
        ip.run_cell("%pin the target column is churn_30d, with " + "detail " * 80,
                    store_history=True)
        ip.run_cell("%compact keep the column names", store_history=True)
        ip.run_cell("%%chat\nAnything else?", store_history=True)
        ends.append(agent.context_state().tokens)
        ip.run_cell("import nbagent\n_ = nbagent.current().chat('and from Python?')",
                    store_history=True)
    lines = meters(captured)
    assert len(lines) == 4  # three chat cells and the %compact cell
    first, second, compacted, third = lines
    assert [tokens(first), tokens(second), tokens(third)] == ends[:2] + [tokens(third)]
    assert len({tokens(first), tokens(second)}) == 2  # their own numbers, not the newest's
    assert "last compaction" not in first + second  # it came after their turns
    assert "last compaction L" in compacted and "last compaction L" in third
    # The newest line follows what came after its turn (here, a chat from Python code).
    assert tokens(third) == agent.context_state().tokens != ends[2]
    widget = ContextMeter.follow(agent)
    assert widget.tokens == agent.context_state().tokens and "last compaction L" in (
        widget.detail)
