"""The meter and the chat display, driven by events as a session sends them, read back
through what IPython's display machinery actually published (no kernel, no comms)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anywidget
import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output
from nbagent.widgets import (
    ChatDisplay,
    ContextMeter,
    MeterLine,
    MeterReading,
    decision_words,
    show_decision,
    show_error,
    show_interrupted,
)

from nbagent import ChatResult, Decision, Settings, context_state
from nbagent.events import (
    Compacted,
    CompactionStarted,
    ContextChanged,
    Retrying,
    Status,
    ToolFinished,
    ToolStarted,
)

WINDOW = Settings(max_context_tokens=8_192)  # auto-compact at 6,841; blocking at 7,250


@pytest.fixture(autouse=True)
def shell() -> Iterator[InteractiveShell]:
    yield InteractiveShell.instance()  # display() publishes through a shell


def state(tokens: int, **options: Any) -> Any:
    settings = options.pop("settings", WINDOW)
    return context_state("m", tokens, settings=settings, model_info=None, **options)


def decision(**fields: Any) -> Decision:
    base: dict[str, Any] = dict(action="compacted", trigger="manual", levels=["L2 memory"],
                                reason="", tokens_before=1_972, tokens_after=1_463,
                                threshold=6_841, changed=True, summary_calls=1)
    return Decision(**{**base, **fields})


def screen(captured: Any) -> list[dict[str, Any]]:
    """What the cell shows after these messages: each output in order, with updates
    applied to every output of the same display id; empty outputs left out."""
    shown: list[tuple[str | None, dict[str, Any]]] = []
    for output in captured.outputs:
        display_id = (output.transient or {}).get("display_id")
        if output.update:
            shown = [(i, output.data if i == display_id else d) for i, d in shown]
        else:
            shown.append((display_id, output.data))
    return [data for _, data in shown if any(data.values())]


def plain(captured: Any) -> list[str]:
    return [data["text/plain"] for data in screen(captured)]


@pytest.mark.parametrize(
    ("tokens", "level", "words"),
    [
        (1_000, "ok", "ok"),
        (5_900, "warning", "warning"),  # 14% left: the engine still says ok; the meter warns
        (6_100, "warning", "warning"),
        (6_500, "error", "compacting soon"),
        (6_900, "compact", "compacting"),
        (7_300, "blocking", "blocked"),
    ],
    ids=["ok", "low-space", "warning", "soon", "compacting", "blocked"],
)
def test_the_meter_names_each_level_in_words(tokens: int, level: str, words: str) -> None:
    reading = MeterReading.of(state(tokens))
    assert (reading.level, reading.label) == (level, words)
    assert reading.status == words
    assert f"context left until auto-compact ({words})" in reading.text()


def test_fifteen_percent_left_is_never_green() -> None:
    reading = MeterReading.of(state(5_815))
    assert round(reading.percent_left) == 15 and reading.level != "ok"
    assert "success" not in reading.html()


def test_the_breaker_and_the_setting_read_differently() -> None:
    breaker = MeterReading.of(state(2_000, breaker_open=True))
    disabled = MeterReading.of(state(2_000, settings=Settings(max_context_tokens=8_192,
                                                               disable_compact=True)))
    assert "%compact" in breaker.status and "3×" in breaker.status
    assert "NBAGENT_DISABLE_COMPACT" in disabled.status and "%compact" not in disabled.status
    assert breaker.level == "warning" and disabled.level == "ok"  # a broken breaker is not ok
    assert "auto-compact at" not in breaker.detail
    for off in (breaker, disabled):  # nothing compacts by itself: the base is the window's
        assert off.headline.endswith("% context left in the effective window")
        assert off.detail.startswith("2,000 tokens · effective window 7,373 · window 8,192")


def test_the_meter_widget_follows_events() -> None:
    meter = ContextMeter()
    meter(ContextChanged(state(5_000), 0.25))
    assert (meter.level, meter.tokens, meter.threshold, meter.window_source) == (
        "ok", 5_000, 6_841, "env")
    assert meter.status == "ok" and meter.percent_left == pytest.approx(26.9, abs=0.1)
    assert meter.headline == "27% context left until auto-compact"
    assert meter.detail == ("5,000 tokens · auto-compact at 6,841 · effective window 7,373 · "
                            "window 8,192 (env) · $0.2500")
    meter(ContextChanged(state(6_900), 0.25))
    assert (meter.level, meter.status) == ("compact", "compacting")
    meter(Compacted(decision(tokens_before=6_900, tokens_after=1_200)))
    assert meter.last_compaction == "L2 memory: 6,900 → 1,200" and meter.compaction_marks == [2]
    assert "last compaction L2 memory: 6,900 → 1,200" in meter.detail
    meter(ContextChanged(state(1_200), 0.3))
    assert meter.usage == [5_000, 6_900, 1_200] and "last compaction" in meter.detail


def test_the_meter_syncs_only_what_the_browser_draws() -> None:
    meter = ContextMeter()
    synced = set(meter.keys) - set(anywidget.AnyWidget.class_trait_names(sync=True)) - {
        "_esm", "_css", "_anywidget_id"}
    assert synced == {"percent_left", "headline", "level", "status", "detail", "threshold",
                      "usage", "compaction_marks"}
    drawing = ContextMeter._esm  # anywidget's module: the browser's drawing code
    for name in synced:
        assert f'"{name}"' in drawing  # read by the drawing code
    assert "export default" in drawing and "#eee" not in drawing


def test_the_meter_has_text_and_html_fallbacks() -> None:
    meter = ContextMeter.for_state(state(5_000))
    data, _ = meter._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in data
    assert data["text/plain"].startswith(
        "nbagent: 27% context left until auto-compact (ok) · 5,000 tokens · auto-compact at 6,841")
    assert 'class="nbagent-meter-body" data-level="ok"' in data["text/html"]
    assert "27% context left" in data["text/html"] and "var(--jp-success-color1" in data["text/html"]


def test_only_the_newest_line_follows_and_an_earlier_one_keeps_its_turn(
        shell: InteractiveShell) -> None:
    line = MeterLine(state(1_000))
    first_run = shell.execution_count
    try:
        with capture_output() as captured:
            line.show()  # the first chat cell
            first = line.display_id
            line(ContextChanged(state(2_000), 0.0))  # its turn
            shell.execution_count += 1  # the cell ended; the next one pins a long fact
            line(ContextChanged(state(2_600), 0.0))  # the newest line follows it
            shell.execution_count += 1
            line.show()  # the second chat cell
            line(ContextChanged(state(6_100), 0.0))
            line(Compacted(decision(tokens_before=6_100, tokens_after=900)))
            line(ToolStarted("c1", "x", "{}"))  # not the meter's business
    finally:
        shell.execution_count = first_run
    lines = plain(captured)
    assert len(lines) == 2 and line.display_id != first
    assert "2,000 tokens" in lines[0] and "last compaction" not in lines[0]  # its own turn
    assert lines[1].startswith("nbagent: 11% context left until auto-compact (warning)")
    assert "last compaction L2 memory: 6,100 → 900" in lines[1]
    moved = [o.data["text/plain"] for o in captured.outputs
             if o.update and o.transient["display_id"] == first]
    assert ["2,000 tokens" in m for m in moved] == [True, False, True]  # followed, then back
    assert "2,600 tokens" in moved[1]


def test_a_line_is_not_redrawn_when_nothing_it_shows_changed(shell: InteractiveShell) -> None:
    line = MeterLine(state(1_000))
    with capture_output() as captured:
        line.show()
        line(ContextChanged(state(1_000), 0.0))
        line.show()  # the earlier line showed its own turn all along: no message for it
    assert len(captured.outputs) == 2 and not any(o.update for o in captured.outputs)


def test_the_reply_is_redrawn_steadily_while_it_streams() -> None:
    now = [0.0]
    view = ChatDisplay(clock=lambda: now[0])
    with capture_output() as captured:
        for _ in range(150):  # a token every 20 ms for 3 s
            view.on_text("word ")
            now[0] += 0.02
        view.finish(ChatResult(text="word " * 150))
    draws = [o for o in captured.outputs if "nbagent-reply" in o.data.get("text/html", "")]
    assert 28 <= len(draws) <= 33  # about every 100 ms, not once at the end
    assert draws[0].data["text/plain"] == "word "  # the first word at once
    assert screen(captured)[-1]["text/plain"] == "word " * 150


def test_one_status_line_follows_the_agent() -> None:
    view = ChatDisplay(clock=lambda: 0.0)
    with capture_output() as captured:
        view.status("starting the local model…")
        assert plain(captured) == ["starting the local model…"]
        view(Status("thinking…"))
        assert plain(captured) == ["thinking…"]
        view(ToolStarted("c1", "describe_variable", '{"name": "df"}'))
        assert plain(captured) == ["running describe_variable(name='df')…"]
        view(ToolFinished("c1", "describe_variable", True, 120, 120, "df: DataFrame"))
        assert plain(captured) == ["describe_variable(name='df') → 120 chars", "thinking…"]
        view(CompactionStarted("midloop", 6_000, 5_800, None))
        assert plain(captured)[-1] == "compacting…"
        view(Compacted(decision()))
        assert plain(captured)[1:] == [
            "compacted (L2 memory): 1,972 → 1,463 tokens, 1 summarizer call"]
        view(Retrying(attempt=1, wait_s=4.2, error="RateLimitError: 429 Too Many Requests"))
        assert plain(captured)[-1] == "retrying in 4 s (rate limit)"
        view.on_text("The answer")
        view.finish(ChatResult(text="The answer"))
    assert plain(captured) == [
        "describe_variable(name='df') → 120 chars",
        "compacted (L2 memory): 1,972 → 1,463 tokens, 1 summarizer call",
        "The answer",
    ]


def test_a_broken_stream_starts_its_text_again() -> None:
    view = ChatDisplay(clock=lambda: 0.0)
    with capture_output() as captured:
        view.on_text("half an ans")
        view(Retrying(attempt=1, wait_s=1, error="503 Service Unavailable"))
        assert plain(captured) == ["retrying in 1 s (provider unavailable)"]
        view.on_text("the whole answer")
        view.finish(ChatResult(text="the whole answer"))
    assert plain(captured) == ["the whole answer"]


def test_a_cut_reply_says_so_and_how_to_go_on() -> None:
    result = ChatResult(text="The three steps are: first, load")
    result.truncated = True  # type: ignore[attr-defined]
    view = ChatDisplay()
    with capture_output() as captured:
        view.on_text(result.text)
        view.finish(result)
    assert plain(captured) == [
        "The three steps are: first, load",
        "⋯ the reply was cut at the model's output limit — send `%chat continue` for the rest",
    ]
    assert "<code>%chat continue</code>" in screen(captured)[-1]["text/html"]


def test_a_reply_without_streaming_and_a_stop_message() -> None:
    with capture_output() as captured:
        ChatDisplay().finish(ChatResult(text="42", stop_message="Stopped after 3 rounds."))
    assert plain(captured) == ["42", "Stopped after 3 rounds."]


def test_tool_previews_are_cut_on_a_word_with_a_marker() -> None:
    view = ChatDisplay()
    preview = "city,month,sales\n" + "Oslo,1,3.5 " * 30 + "Lim"
    with capture_output() as captured:
        view(ToolStarted("c1", "read_file", '{"path": "sales.csv"}'))
        view(ToolFinished("c1", "read_file", True, 5_000, 90_000, preview))
    tool, status = screen(captured)
    assert status["text/plain"] == "thinking…"
    assert tool["text/plain"] == "read_file(path='sales.csv') → 5,000 chars (cut from 90,000)"
    assert "3.5… [cut]</pre>" in tool["text/html"] and "Lim" not in tool["text/html"]


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        ({}, "compacted (L2 memory): 1,972 → 1,463 tokens, 1 summarizer call"),
        ({"levels": ["L1 snip", "L2 memory"], "summary_calls": 2},
         "compacted (L1 snip → L2 memory): 1,972 → 1,463 tokens, 2 summarizer calls"),
        ({"levels": ["L1 snip"], "summary_calls": 0},
         "compacted (L1 snip): 1,972 → 1,463 tokens, 0 summarizer calls"),
        ({"action": "none", "levels": [], "reason": "under the trigger", "changed": False},
         "nothing compacted: under the trigger (1,972 tokens)"),
        ({"action": "failed", "reason": "the summarizer timed out", "changed": False},
         "compaction failed: the summarizer timed out — the history is unchanged (1,972 tokens)"),
    ],
    ids=["one-call", "two-calls", "no-call", "nothing", "failed"],
)
def test_compaction_words(fields: dict[str, Any], words: str) -> None:
    assert decision_words(decision(**fields)) == words


def test_percent_compact_shows_one_line_and_the_summary() -> None:
    with capture_output() as captured:
        show_decision(decision(summary="## 1. Primary Request\nkeep <columns>"))
    (shown,) = screen(captured)
    assert shown["text/plain"] == "compacted (L2 memory): 1,972 → 1,463 tokens, 1 summarizer call"
    assert "<details><summary>summary</summary><pre>## 1. Primary Request\nkeep &lt;columns&gt;" in (
        shown["text/html"])


def test_an_error_is_one_line_with_no_stderr() -> None:
    with capture_output() as captured:
        show_error("No API key for openai/gpt-4o: set OPENAI_API_KEY, e.g. %env OPENAI_API_KEY=…")
    assert plain(captured) == [
        "nbagent: No API key for openai/gpt-4o: set OPENAI_API_KEY, e.g. %env OPENAI_API_KEY=…"]
    assert captured.stderr == "" and captured.stdout == ""
    assert 'class="nbagent-error"' in screen(captured)[0]["text/html"]


def test_an_interrupt_is_one_line() -> None:
    with capture_output() as captured:
        show_interrupted()
    assert plain(captured) == ["interrupted — the session is intact"]


class FakeAgent:
    """What `follow` needs of an agent: its event stream, its state, cost and billing."""

    def __init__(self) -> None:
        from nbagent.events import EventStream

        self.events = EventStream()
        self.cost = 0.5

    def context_state(self) -> Any:
        return state(3_000)

    def billing(self) -> Any:
        from nbagent import Billing

        return Billing()


@pytest.mark.parametrize("kind", [ContextMeter, MeterLine], ids=["widget", "line"])
def test_a_session_has_one_meter_of_each_kind_however_often_it_is_shown(kind: Any) -> None:
    agent = FakeAgent()
    first = kind.follow(agent)
    assert kind.follow(agent) is first and agent.events.subscribers() == [first]
    assert "3,000 tokens · auto-compact at 6,841" in str(first._repr_mimebundle_())
    agent.events.emit(ContextChanged(state(4_000), 0.5))
    assert "4,000 tokens · auto-compact at 6,841" in str(first._repr_mimebundle_())


def test_the_widget_keeps_a_plain_copy_beside_it_up_to_date() -> None:
    meter = ContextMeter.for_state(state(3_000))
    with capture_output() as captured:
        meter._ipython_display_()
        meter(ContextChanged(state(4_000), 0.0))
    copy, widget = screen(captured)
    assert '<div class="nbagent-meter-fallback">' in copy["text/html"]
    assert copy["text/plain"].startswith("nbagent: 42% context left")  # updated in place
    assert "application/vnd.jupyter.widget-view+json" in widget
    assert widget["text/plain"] == "" and "text/html" not in widget  # the copy is not repeated
