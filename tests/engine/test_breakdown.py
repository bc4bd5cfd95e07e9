"""The numbers behind the context table: the system prompt and the tool schemas read the
same in every state of a session and after a resume; percent left and free agree."""

from __future__ import annotations

from typing import Any

import pytest

from nbagent import CompactionController, History, Settings, Usage, context_state
from nbagent.engine import (
    TokenTracker,
    context_breakdown,
    count_message_tokens,
    count_tools_tokens,
    estimate_tokens,
)
from nbagent.testing import ScriptedSummarizer
from tests.helpers import session

TOOLS: list[dict[str, Any]] = [{"type": "function", "function": {
    "name": "describe", "description": "Describe a DataFrame column.",
    "parameters": {"type": "object", "properties": {"name": {"type": "string"}}}}}]


def words(text: str) -> int:  # a model's exact counter: different from the estimator
    return len(text.split()) + 1


def test_system_and_tools_are_the_same_in_every_state_and_after_a_resume() -> None:
    settings = Settings(max_context_tokens=8_192, snip_batch_tokens=0)
    tracker = TokenTracker(words)
    ctl = CompactionController(summarize=ScriptedSummarizer(default="- sales_df notes"),
                               window="local/test", settings=settings, tracker=tracker)
    history = History(session(12))
    readings = []

    def read() -> None:
        state = ctl.state(history)
        readings.append(context_breakdown(history, TOOLS, state, words))

    read()
    tracker.record_usage(history, Usage(input_tokens=9_000, output_tokens=10),
                         model="local/test", tools=TOOLS)  # real usage moves the calibration
    read()
    ctl.compact_now(history)
    read()
    resumed = History(history.messages)  # as a resume rebuilds it
    readings.append(context_breakdown(resumed, TOOLS, context_state(
        ctl.window(), 1_234, settings=settings), words))
    assert len({r.system for r in readings}) == 1 and len({r.tools for r in readings}) == 1
    system = history.messages[0]
    assert readings[0].system == count_message_tokens(system, count_text=words)
    assert readings[0].tools == count_tools_tokens(TOOLS, words)
    assert len({r.state.tokens for r in readings}) > 1  # the states did differ


def test_the_kinds_add_up_to_the_total_and_free_agrees_with_percent_left() -> None:
    history = History(session(6))
    for tokens in (2_000, 3_333, 6_000):
        state = context_state("local/test", tokens, settings=Settings(max_context_tokens=8_192))
        breakdown = context_breakdown(history, TOOLS, state, estimate_tokens)
        parts = breakdown.parts
        assert sum(v for k, v in parts.items() if k != "free") == tokens
        assert breakdown.free == breakdown.base - tokens
        assert round(100 * breakdown.free / breakdown.base) == round(state.percent_left)
        assert breakdown.free_percent == pytest.approx(state.percent_left)


def test_with_auto_compact_off_free_is_measured_against_the_effective_window() -> None:
    settings = Settings(max_context_tokens=8_192, disable_compact=True)
    state = context_state("local/test", 3_000, settings=settings)
    breakdown = context_breakdown(History(session(3)), [], state)
    assert breakdown.base == state.thresholds.effective_window
    assert round(100 * breakdown.free / breakdown.base) == round(state.percent_left)


def test_a_rounds_figures_count_with_the_tool_results_not_the_conversation() -> None:
    import base64
    import io

    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from nbagent.engine import IMAGES_HEADER, REPLY_PRIMING

    figure = Figure(figsize=(6.4, 4.8), dpi=100)
    figure.add_subplot().plot([1, 3, 2])
    buffer = io.BytesIO()
    FigureCanvasAgg(figure).print_png(buffer)
    png = base64.b64encode(buffer.getvalue()).decode()
    call = {"id": "c1", "type": "function", "function": {"name": "run_code",
                                                          "arguments": '{"code": "plot()"}'}}
    round_ = [{"role": "system", "content": "You are careful."},
              {"role": "user", "content": "plot the sales"},
              {"role": "assistant", "content": None, "tool_calls": [call]},
              {"role": "tool", "tool_call_id": "c1", "content": "a line plot, 3 points"}]
    figures = {"role": "user", "content": [
        {"type": "text", "text": f"{IMAGES_HEADER}\nimage 1: agent run 1, figure 1"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{png}"}}]}
    rows = []
    for messages in (round_, [*round_, figures]):
        history = History([*messages, {"role": "assistant", "content": "It rises."}])
        # the state's total as counted, so each row is its own count (no sharing out)
        tokens = sum(history.message_tokens(i) for i in range(len(history))) + \
            count_tools_tokens(TOOLS, estimate_tokens) + REPLY_PRIMING
        state = context_state("local/test", tokens, settings=Settings(max_context_tokens=8_192))
        rows.append(context_breakdown(history, TOOLS, state, estimate_tokens).parts)
    without, with_figures = rows
    grown = History([figures]).message_tokens(0)
    assert grown > 400  # a 640×480 image, counted by its size
    assert with_figures["tool results"] == without["tool results"] + grown
    assert with_figures["conversation"] == without["conversation"]
    assert with_figures["summary / memory"] == without["summary / memory"] == 0
