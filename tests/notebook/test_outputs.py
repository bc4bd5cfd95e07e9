"""Chat outputs that need no live kernel: the meter and the chat are ordinary rich outputs
(text/html beside text/plain) updated in place by display id, shown from the first moment
of a chat; and each says what happened in one line (a replaced exchange, an error, a cost)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output
from nbagent.widgets import ChatDisplay, ContextMeter, MeterLine

import nbagent
from nbagent import Agent, ChatResult, tool
from nbagent.events import ToolFinished, ToolStarted
from nbagent.testing import ScriptedModel, calls, provider_error, reply
from tests.notebook.helpers import plain, session, shown

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


def test_every_chat_cell_shows_a_meter_line_of_its_own(ip: InteractiveShell) -> None:
    agent = session(ScriptedModel(default=reply("ok")))
    ids = []
    for _ in range(2):
        with capture_output() as captured:
            ip.run_cell_magic("chat", "", "again")
        ids.append(captured.outputs[0].transient["display_id"])
    assert len(set(ids)) == 2 and ids[-1] == MeterLine.follow(agent).display_id  # the newest
    # (tests/notebook/test_record.py: the earlier one keeps the state of its own turn)


class BilledAgent(Agent):
    def billing(self) -> nbagent.Billing:  # what a provider's cache would have billed
        return nbagent.Billing(requests=1, input_tokens=380, cache_read_tokens=620,
                               input_cost=0.0123)


def test_context_and_the_meter_show_the_same_figures(ip: InteractiveShell) -> None:
    agent = session(ScriptedModel(default=reply("a reply of some length " * 30)),
                    kind=BilledAgent)
    with capture_output():
        for turn in range(3):
            ip.run_line_magic("chat", f"question {turn} " * 30)
    with capture_output() as context:
        ip.run_line_magic("context", "")
    table = plain(context)[0]
    meter = MeterLine.follow(agent).reading
    assert meter is not None
    headline = re.search(r"\d+% context left", meter.text()).group(0)
    assert headline in table
    free = re.search(r"^free\s+([\d,]+)\s+(\d+)%$", table, re.MULTILINE)
    assert free is not None
    assert int(free.group(1).replace(",", "")) == meter.threshold - meter.tokens
    assert f"{free.group(2)}% context left" == headline  # one rounding, one base
    assert "62% of input read from cache" in table and "62% of input read from cache" in (
        meter.text())


def test_a_missing_key_is_one_line_with_the_fix(ip: InteractiveShell) -> None:
    raw = ("Incorrect API key provided: sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD\n"
           "litellm.AuthenticationError: AuthenticationError: OpenAIException\n"
           "Received Model Group=openai/gpt-4o\nAvailable Model Group Fallbacks=None")
    session(ScriptedModel([provider_error(401, raw)], name="openai/gpt-4o"))
    with capture_output() as captured:
        ip.run_cell_magic("chat", "", "hi")
    (error,) = [d for d in shown(captured) if "nbagent-error" in d.get("text/html", "")]
    assert "\n" not in error["text/plain"] and "OPENAI_API_KEY" in error["text/plain"]
    assert "ProviderError" not in error["text/plain"] and "litellm" not in error["text/plain"]
    assert "abcdefghijklmnopqrstuvwxyz0123456789" not in str(captured.outputs)


def test_a_replaced_exchange_and_a_cost_are_said_in_one_line_each() -> None:
    result = ChatResult(text="42", cost=0.0042)
    result.replaced = True  # type: ignore[attr-defined]  # set by the loop when it replaced
    with capture_output() as captured:
        ChatDisplay().finish(result)
        ChatDisplay().finish(ChatResult(text="free"))
    assert plain(captured) == [
        "42",
        "this cell's earlier exchange was replaced by this one (the earlier one stays in "
        "the archive)",
        "this cell cost $0.0042",
        "free",
    ]


class Kernel:
    """What `_cell_id` reads of ipykernel: the running request's cell id."""

    def get_parent(self) -> dict[str, Any]:
        return {"metadata": {"cellId": "cell-1"}}


@pytest.mark.skipif(not hasattr(ChatResult, "replaced"),
                    reason="ChatResult.replaced is not in this version of the library yet")
def test_a_rerun_cell_says_it_replaced_its_exchange(ip: InteractiveShell) -> None:
    session(ScriptedModel(default=reply("ok")))
    ip.kernel = Kernel()
    try:
        with capture_output() as first:
            ip.run_cell_magic("chat", "", "hello")
        with capture_output() as again:
            ip.run_cell_magic("chat", "", "hello")
    finally:
        del ip.kernel
    assert not any("replaced" in line for line in plain(first))
    assert any("earlier exchange was replaced" in line for line in plain(again))


def test_the_bar_fills_with_what_is_left_as_its_words_say() -> None:
    from tests.notebook.test_widgets import state

    line = MeterLine(state(6_100))
    html = line._repr_mimebundle_()["text/html"]
    assert line.reading is not None and "11% context left" in html
    width = float(re.search(r'nbagent-meter-bar" style="[^"]*width:([\d.]+)%', html).group(1))
    assert width == pytest.approx(line.reading.percent_left, abs=0.1)
    drawing = ContextMeter._esm  # the meter's drawing code, anywidget's module
    assert "100 - percent" not in drawing and "Math.min(100, percent)" in drawing


def test_the_first_run_notice_wraps_between_words(ip: InteractiveShell) -> None:
    agent = session(ScriptedModel(default=reply("hi")))
    agent.notice = "answers come from a very small model; agent.use_model('openai/gpt-4o')"
    with capture_output() as captured:
        ip.run_cell_magic("chat", "", "hello")
    (notice,) = [d for d in shown(captured) if "small model" in d["text/plain"]]
    assert "word-break:normal" in notice["text/html"]  # HTML, not a <pre> that breaks words
    assert "%nbagent model=openai/gpt-4o" in notice["text/plain"]  # in notebook words


@pytest.mark.parametrize("arguments", ["{}", "", "  "], ids=["braces", "empty", "blank"])
def test_a_tool_without_arguments_shows_none(arguments: str) -> None:
    view = ChatDisplay()
    with capture_output() as captured:
        view(ToolStarted("c1", "list_variables", arguments))
        view(ToolFinished("c1", "list_variables", True, 12, 12, "df: DataFrame"))
    tool_line = shown(captured)[0]
    assert tool_line["text/plain"] == "list_variables() → 12 chars"
    assert "<pre>df: DataFrame</pre>" in tool_line["text/html"]


def test_the_sessions_cache_share_and_each_cells_cost_from_real_usage(
        ip: InteractiveShell) -> None:
    from nbagent import Usage

    used = Usage(input_tokens=200, output_tokens=20, cache_read_tokens=600)
    agent = session(ScriptedModel([reply("first", usage=used, cost=0.0031),
                                   reply("second", usage=used)]))
    if not callable(getattr(agent, "billing", None)):
        pytest.skip("Agent.billing is not in this library version yet")
    with capture_output() as paid:
        ip.run_line_magic("chat", "one")
    with capture_output() as unpaid:
        ip.run_line_magic("chat", "two")
    assert "this cell cost $0.0031" in plain(paid)
    assert not any("this cell cost" in line for line in plain(unpaid))
    with capture_output() as context:
        ip.run_line_magic("context", "")
    share = f"{round(100 * agent.billing().cache_read_share)}% of input read from cache"
    assert share in plain(context)[0] and share != "0% of input read from cache"
    assert share in str(MeterLine.follow(agent).reading)
