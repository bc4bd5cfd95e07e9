"""A delegated task in the chat cell (`widgets/_chat.py`, `_chat_lines.BranchLine`): one
collapsible line in place of its tool call's, redrawn with what it does now and, when it
ends, how it ended (rounds, tokens in its own window and returned, cost); opened, its steps
and its report, inert; a terminal prints it once. Through `%%chat`, the line appears in the
cell and `%context` says what the delegated tasks kept out of the window."""

from __future__ import annotations

from pathlib import Path

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output
from nbagent.widgets import ChatDisplay

from nbagent import ChatResult
from nbagent.events import (
    Branch,
    BranchFinished,
    BranchProgress,
    BranchStarted,
    Compacted,
    Status,
    ToolFinished,
    ToolStarted,
)
from nbagent.testing import ScriptedModel, calls, reply
from tests.notebook.helpers import decision, html_of, plain, session, shown

TASK = "Count the <b>ERROR</b> lines in app.log"
ENDED = Branch(1, TASK, "scripted/cheap", "done", "[delegated task 1 (done)]\n20 errors "
               "<script>alert(1)</script>", rounds=2, tool_calls=2, transcript_tokens=48_210,
               returned_tokens=61, compactions=1, cost=0.0123)


def run_a_branch(view: ChatDisplay) -> None:
    view(ToolStarted("c1", "delegate", '{"task": "count"}'))
    view(BranchStarted(1, TASK, "scripted/cheap"))
    view(BranchProgress(1, Status("thinking…")))
    view(BranchProgress(1, ToolStarted("b1", "read_file", '{"path": "app.log"}')))
    view(BranchProgress(1, ToolFinished("b1", "read_file", True, 16_000, 600_000, "2026")))
    view(BranchProgress(1, Compacted(decision())))
    view(BranchProgress(1, ToolStarted("b2", "read_file", '{"path": "app.log", "offset": 7}')))


@pytest.mark.usefixtures("shell")
def test_one_line_redrawn_with_its_progress_then_how_it_ended() -> None:
    view = ChatDisplay(clock=lambda: 0.0, live=True)
    with capture_output() as captured:
        run_a_branch(view)
        now = [p for p in plain(captured) if p.startswith("delegated task 1")]
        assert now == ["delegated task 1: Count the <b>ERROR</b> lines in app.log — running "
                       "read_file(path='app.log', offset=7)…"]
        view(BranchProgress(1, ToolFinished("b2", "read_file", True, 9_000, 9_000, "")))
        view(BranchFinished(ENDED))
        view(ToolFinished("c1", "delegate", True, 60, 60, "[delegated task 1 (done)]"))
        view.finish(ChatResult(text="20 errors."))
    outputs = shown(captured)
    lines = [o for o in outputs if "nbagent-branch" in o.get("text/html", "")]
    assert len(lines) == 1  # one line, redrawn in place
    assert not any("nbagent-tool" in o.get("text/html", "") for o in outputs)  # not twice
    (line,) = lines
    assert line["text/plain"] == (
        "delegated task 1: Count the <b>ERROR</b> lines in app.log → done: 2 round(s), 2 tool "
        "call(s) with scripted/cheap; 48,210 tokens in its own window, 61 returned, $0.0123")
    body = line["text/html"]
    assert "&lt;b&gt;ERROR" in body and "<b>ERROR" not in body  # the model's words, inert
    assert "&lt;script&gt;" in body and "<script>" not in body
    assert "read_file(path=&#x27;app.log&#x27;) → 16,000 chars (cut from 600,000)" in body
    assert "its own context: compacted (L2 memory): 1,972 → 1,463 tokens" in body
    assert body.index("its own context") < body.index("offset=7")  # in the order done
    assert "report:" in body and "20 errors" in body


@pytest.mark.usefixtures("shell")
def test_a_terminal_prints_the_line_once_when_it_ends() -> None:
    view = ChatDisplay(live=False)
    with capture_output() as captured:
        run_a_branch(view)
        assert not [p for p in plain(captured) if "delegated" in p]  # nothing to take back
        view(BranchFinished(ENDED))
        view(ToolFinished("c1", "delegate", True, 60, 60, "[delegated task 1 (done)]"))
    printed = [str(o.data.get("text/plain")) for o in captured.outputs]
    assert [p for p in printed if p.startswith("delegated task 1")] == [
        "delegated task 1: Count the <b>ERROR</b> lines in app.log → done: 2 round(s), 2 "
        "tool call(s) with scripted/cheap; 48,210 tokens in its own window, 61 returned, "
        "$0.0123"]
    assert not [p for p in printed if p.startswith("delegate(")]


def test_a_chat_cell_shows_the_branch_and_context_what_it_kept_out(
        ip: InteractiveShell, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "app.log").write_text("".join(f"line {i} ok\n" for i in range(20_000)))
    model = ScriptedModel([calls(("delegate", {"task": "count the lines", "data": ["app.log"]})),
                           calls(("read_file", {"path": "app.log", "limit": 500})),
                           reply("20,000 lines, all ok"), reply("All 20,000 lines are ok.")])
    session(model, settings={"max_context_tokens": 32_000})
    with capture_output() as captured:
        ip.run_cell_magic("chat", "", "how many lines?")
    model.assert_consumed()
    (line,) = [o for o in shown(captured) if "nbagent-branch" in o.get("text/html", "")]
    assert line["text/plain"].startswith("delegated task 1: count the lines → done: 1 round(s)")
    assert "read_file(path=&#x27;app.log&#x27;, limit=500) →" in line["text/html"]
    assert "All 20,000 lines are ok." in html_of(captured)
    with capture_output() as captured:
        ip.run_line_magic("context", "")
    (table,) = [o.data["text/plain"] for o in captured.outputs]
    assert "delegated tasks: 1 — their own windows took in " in table
    assert "kept out of this window" in table
