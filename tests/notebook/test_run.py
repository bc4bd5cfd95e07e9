"""What each magic does once its line is read (`widgets/_run.py`), through a real shell: a
chat shows the meter from its first moment and a meter line of its own, and says an error
or an interrupt in one line; `%compact` and `%context` show what they did."""

from __future__ import annotations

import re
from typing import Any

from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output
from nbagent.widgets import ContextMeter, MeterLine

from nbagent import Usage, tool
from nbagent.events import ToolStarted
from nbagent.testing import ScriptedModel, ScriptedSummarizer, calls, provider_error, reply
from tests.helpers import nine_sections
from tests.notebook.helpers import html_of, session, shown

WIDGET = "application/vnd.jupyter.widget-view+json"


def test_a_chat_cell_has_no_widget_only_rich_outputs_with_the_meter_first(
        ip: InteractiveShell) -> None:
    seen_during: list[list[str]] = []
    captured_now: list[Any] = []

    @tool
    def load(part: int) -> str:
        """Load a part."""
        seen_during.append([str(o.data.get("text/plain")) for o in captured_now[0].outputs])
        return "value " * 300

    model = ScriptedModel([calls(("load", {"part": n})) for n in range(3)] + [reply("done")])
    session(model, tools=[load], builtin_tools=False)
    with capture_output() as captured:
        captured_now.append(captured)
        ip.run_cell_magic("chat", "", "load everything")
    assert not any(WIDGET in o.data for o in captured.outputs)  # nothing needs a kernel
    for output in captured.outputs:
        if output.data.get("text/plain"):
            assert "text/html" in output.data or "text/markdown" in output.data
    assert re.match(r"nbagent: \d+% context left", seen_during[0][0])  # before any reply
    meter_id = captured.outputs[0].transient["display_id"]
    updates = [o for o in captured.outputs
               if o.update and o.transient.get("display_id") == meter_id]
    tokens = [int(re.search(r"([\d,]+) tokens · auto-compact at 6,841",
                            o.data["text/plain"]).group(1).replace(",", "")) for o in updates]
    assert len(tokens) >= 3 and tokens == sorted(tokens) and len(set(tokens)) >= 3  # live
    assert "context left" in shown(captured)[0]["text/html"]


def test_a_chat_cells_line_only_rises_though_the_usage_reads_under_our_count(
        ip: InteractiveShell) -> None:
    # the provider reads about two thirds of what we count: the count falls at each usage,
    # the line of the cell whose turn it is does not (nor at the cell's end)
    model = ScriptedModel([calls(("add", {"a": 1, "b": 2}), usage=Usage(1_000, 10)),
                           reply("3", usage=Usage(1_030, 2)),
                           reply("again 3", usage=Usage(1_060, 3))], name="gpt-4o-mini")

    @tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    session(model, tools=[add], builtin_tools=False,
            system="You answer questions about the user's data. " * 120)
    for question in ("add 1 and 2", "once more"):
        with capture_output() as captured:
            ip.run_cell_magic("chat", "", question)
        meter_id = captured.outputs[0].transient["display_id"]
        tokens = [int(re.search(r"([\d,]+) tokens ·", o.data["text/plain"]).group(1)
                      .replace(",", "")) for o in captured.outputs
                  if o.transient.get("display_id") == meter_id]
        assert len(tokens) >= 3 and tokens == sorted(tokens), (question, tokens)


def test_every_chat_cell_shows_a_meter_line_of_its_own(ip: InteractiveShell) -> None:
    agent = session(ScriptedModel(default=reply("ok")))
    ids = []
    for _ in range(2):
        with capture_output() as captured:
            ip.run_cell_magic("chat", "", "again")
        ids.append(captured.outputs[0].transient["display_id"])
    assert len(set(ids)) == 2 and ids[-1] == MeterLine.follow(agent).display_id  # the newest


def test_percent_compact_prints_levels_and_tokens(ip: InteractiveShell) -> None:
    summarize = ScriptedSummarizer(default=nine_sections())
    session(ScriptedModel(default=reply("a long analysis of the data " * 40)), summarize)
    with capture_output():
        for t in range(4):
            ip.run_line_magic("chat", f"question {t} " * 40)
    with capture_output() as captured:
        ip.run_line_magic("compact", "focus on revenue")
    text = html_of(captured)
    assert "compacted (L" in text and "→" in text and "<details>" in text
    assert "focus on revenue" in str(summarize.requests[0])


def test_context_shows_the_breakdown(ip: InteractiveShell) -> None:
    session(ScriptedModel(default=reply("ok")))
    with capture_output():
        ip.run_line_magic("chat", "hello")
    with capture_output() as captured:
        ip.run_line_magic("context", "")
    text = html_of(captured)
    for expected in (
        "system prompt",
        "tool schemas",
        "tool results",
        "summary / memory",
        "free",
        "auto-compact trigger",
        "effective window",
        "from env",
        "auto-compact 6,841 (armed)",
        "circuit breaker: closed",
        "session cost $0.0000",
    ):
        assert expected in text


def test_context_says_what_the_tool_schemas_cost_when_sized_to_a_small_window(
        ip: InteractiveShell) -> None:
    """Issue 42: at 4,096 the built-ins' schemas took a third of the window; sized, they
    take at most 15% of it, and `%context` says so with what they would cost in full."""
    from nbagent import Settings

    agent = session(ScriptedModel(default=reply("ok")),
                    settings=Settings(max_context_tokens=4_096))
    with capture_output():
        ip.run_line_magic("chat", "hello")
    with capture_output() as captured:
        ip.run_line_magic("context", "")
    sized = agent.sized_tools()
    row = next(line for line in str(captured.outputs[-1].data["text/plain"]).splitlines()
               if line.startswith("tool schemas"))
    assert f"{sized.tokens:,}" in row and f"({sized.full_tokens:,} in full)" in row
    assert "form to fit 15% of the window" in row
    assert sized.tokens <= 0.15 * agent.context_state().thresholds.effective_window


def test_an_unrecoverable_error_is_one_readable_message(ip: InteractiveShell) -> None:
    session(ScriptedModel([provider_error(
        401, "Incorrect API key provided: sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD")],
                          name="openai/gpt-4o"))
    with capture_output() as captured:
        ip.run_cell_magic("chat", "", "hi")
    text = html_of(captured)
    assert "OPENAI_API_KEY" in text and "abcdefghijklmnopqrstuvwxyz0123456789" not in text
    assert "Traceback" not in captured.stdout + captured.stderr + text
    assert captured.stderr == ""  # no red retry blocks


def test_an_interrupt_is_one_line_and_the_next_chat_works(ip: InteractiveShell) -> None:
    @tool
    def stop() -> str:
        """Stands in for the user pressing Interrupt."""
        raise KeyboardInterrupt

    agent = session(ScriptedModel([calls(("stop", {})), reply("fine")]), tools=[stop])
    with capture_output() as captured:
        ip.run_cell_magic("chat", "", "go")
    assert "interrupted — the session is intact" in html_of(captured) + str(
        [o.data for o in captured.outputs])
    assert "Traceback" not in captured.stdout + captured.stderr
    with capture_output():
        ip.run_cell_magic("chat", "", "again")
    assert agent.history[-1]["content"] == "fine"


def test_the_meter_changes_between_tool_rounds_of_one_cell(ip: InteractiveShell) -> None:
    @tool
    def load(part: int) -> str:
        """Load a part."""
        return "value " * 300

    model = ScriptedModel([calls(("load", {"part": n})) for n in range(4)] + [reply("done")])
    agent = session(model, tools=[load], builtin_tools=False)
    seen: list[int] = []
    with capture_output():
        ip.run_cell_magic("chat", "", "load everything")
    meter = ContextMeter.follow(agent)  # the session's one meter, subscribed once
    agent.events.subscribe(
        lambda e: seen.append(meter.tokens) if isinstance(e, ToolStarted) else None)
    model.steps = [calls(("load", {"part": n})) for n in range(4)] + [reply("done")]
    with capture_output():
        ip.run_cell_magic("chat", "", "and again")
    assert len(seen) == 4 and seen == sorted(seen) and len(set(seen)) == 4  # live, round by round
    assert meter.tokens > seen[-1]
