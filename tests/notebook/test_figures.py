"""One set of figures, one way of saying them: a chat cell's meter line and `%context` name
the same quantities with the same numbers (what "% left" is of, the auto-compact trigger,
the effective window, the window), whether automatic compaction is armed or off. Read back
from what a real shell published."""

from __future__ import annotations

import re

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output
from nbagent.widgets import MeterLine

from nbagent import Settings
from nbagent.testing import ScriptedModel, reply
from tests.notebook.helpers import plain, session

ROW = re.compile(r"^(?P<name>[a-z /-]+?)\s+(?P<tokens>[\d,]+)\s+(?P<share>\d+%)?(?:\s+(?P<how>.*))?$")


def rows(table: str) -> dict[str, tuple[int, str, str]]:
    found = {}
    for line in table.splitlines()[2:]:
        match = ROW.match(line)
        if match:
            found[match["name"]] = (int(match["tokens"].replace(",", "")), match["share"] or "",
                                    match["how"] or "")
    return found


def figure(text: str, name: str) -> int:
    match = re.search(rf"(?<!effective ){name} ([\d,]+)", text)
    assert match is not None, (name, text)
    return int(match.group(1).replace(",", ""))


@pytest.mark.parametrize("off", [False, True], ids=["armed", "compaction-off"])
def test_the_meter_and_context_name_the_same_figures(ip: InteractiveShell, off: bool) -> None:
    settings = Settings(max_context_tokens=16_384, disable_compact=off)
    agent = session(ScriptedModel(default=reply("a longer answer " * 40)), settings=settings)
    with capture_output():
        ip.run_cell_magic("chat", "", "tell me about the data " * 20)
    with capture_output() as context:
        ip.run_line_magic("context", "")
    reading = MeterLine.follow(agent).reading
    assert reading is not None
    table = plain(context)[0]
    limits = agent.context_state().thresholds
    headline, column = table.splitlines()[:2]
    figures = rows(table)

    # what "% left" is of, said by the headline, and the same headline in both
    base = "effective window" if off else "auto-compact trigger"
    words = "in the effective window" if off else "until auto-compact"
    assert reading.headline.endswith(f"% context left {words}")
    assert headline.startswith(reading.headline) and reading.headline in reading.text()
    assert column.strip().endswith("% of the effective window" if off else "% of the trigger")
    assert figures[base][1] == "100%"  # the base, named as the headline names it
    assert figures["free"] == (reading.threshold - reading.tokens,
                               re.search(r"\d+%", reading.headline).group(0), "")  # type: ignore[union-attr]

    # every figure the meter names, the same in %context and the engine's thresholds
    detail = reading.detail
    assert figure(detail, "effective window") == figures["effective window"][0] == (
        limits.effective_window)
    assert figure(detail, "window") == figures["window"][0] == limits.context_window == 16_384
    assert figures["window"][2] == "from env"
    reserve = limits.context_window - limits.effective_window
    assert figures["effective window"][2] == f"window − output reserve {reserve:,}"
    if off:
        assert "auto-compact at" not in detail and "auto-compact trigger" not in figures
        assert f"auto-compact {limits.auto_compact:,} (off)" in table  # the thresholds line
    else:
        assert figure(detail, "auto-compact at") == figures["auto-compact trigger"][0] == (
            limits.auto_compact)
        assert f"auto-compact at {limits.auto_compact:,}" in reading.short_detail
    assert sum(tokens for name, (tokens, _, _) in figures.items()
               if name not in ("auto-compact trigger", "effective window", "window")) == (
        reading.threshold)  # what fills the base and what is free add up to it
