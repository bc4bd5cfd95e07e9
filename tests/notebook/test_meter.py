"""The meters (`widgets/_meter.py`), driven by events as a session sends them and read back
through what IPython's display machinery published (no kernel, no comms): the widget syncs
only what its drawing code reads and keeps a plain copy beside it; the line in each chat
cell follows only while it is the newest; one meter of each kind per session."""

from __future__ import annotations

import re
from typing import Any

import anywidget
import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output
from nbagent.widgets import ContextMeter, MeterLine

from nbagent.events import Compacted, ContextChanged, ToolStarted
from tests.notebook.helpers import decision, plain, shown, state

pytestmark = pytest.mark.usefixtures("shell")  # display() publishes through a shell


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


def test_a_new_line_starts_from_the_context_as_it_stands_and_the_last_keeps_its_turn(
        shell: InteractiveShell) -> None:
    # within a turn the session tells the line the turn's highest figure (4,000), though
    # the count underneath fell (3,000: a usage calibrated it); the next cell's turn starts
    # from the count, so its line must too: shown at 4,000, its first figure would fall
    agent = FakeAgent()
    line = MeterLine.follow(agent)
    first_run = shell.execution_count
    try:
        with capture_output() as captured:
            line.show()
            first = line.display_id
            agent.events.emit(ContextChanged(state(4_000), 0.5))  # its turn's highest
            shell.execution_count += 1
            line.show()  # the next chat cell
    finally:
        shell.execution_count = first_run
    lines = plain(captured)
    assert "3,000 tokens" in lines[1]  # the context as it stands
    assert "4,000 tokens" in [o.data["text/plain"] for o in captured.outputs
                              if o.transient["display_id"] == first][-1]  # its own turn


def test_the_widget_keeps_a_plain_copy_beside_it_up_to_date() -> None:
    meter = ContextMeter.for_state(state(3_000))
    with capture_output() as captured:
        meter._ipython_display_()
        meter(ContextChanged(state(4_000), 0.0))
    copy, widget = shown(captured)
    assert '<div class="nbagent-meter-fallback">' in copy["text/html"]
    assert copy["text/plain"].startswith("nbagent: 42% context left")  # updated in place
    assert "application/vnd.jupyter.widget-view+json" in widget
    assert widget["text/plain"] == "" and "text/html" not in widget  # the copy is not repeated


def test_the_bar_fills_with_what_is_left_as_its_words_say() -> None:
    line = MeterLine(state(6_100))
    html = line._repr_mimebundle_()["text/html"]
    assert line.reading is not None and "11% context left" in html
    width = float(re.search(r'nbagent-meter-bar" style="[^"]*width:([\d.]+)%', html).group(1))
    assert width == pytest.approx(line.reading.percent_left, abs=0.1)
    drawing = ContextMeter._esm  # the meter's drawing code, anywidget's module
    assert "100 - percent" not in drawing and "Math.min(100, percent)" in drawing
