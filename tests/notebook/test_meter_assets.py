"""The meter's browser side (`widgets/_meter_assets.py`): the drawing code and the plain-HTML
line colour each level alike, every colour one of JupyterLab's theme variables with a
fallback for pages without them, and a level the drawing code does not know drawn as a
warning."""

from __future__ import annotations

import re

import pytest
from nbagent.widgets import ContextMeter, MeterReading

from nbagent import METER_LEVELS
from tests.notebook.helpers import state

# a context of this many tokens (of 8,192) reads as each level of the meter's table: where
# the level starts (derived from the table, so a new level is drawn here without an edit)
LEVELS = {level.name: getattr(state(0).thresholds, level.starts_at) if level.starts_at else 0
          for level in METER_LEVELS}


def drawing_colours() -> dict[str, str]:
    """The level → colour table the browser's drawing code carries."""
    table = re.search(r"const COLOURS = \{(.*?)\};", ContextMeter._esm)
    assert table is not None, "the drawing code carries no colour table"
    return dict(re.findall(r'(\w+): "([^"]+)"', table.group(1)))


def test_every_level_has_its_own_theme_colour_with_a_fallback() -> None:
    colours = drawing_colours()
    assert set(colours) == {level.name for level in METER_LEVELS} == set(LEVELS)
    assert len(set(colours.values())) == len(LEVELS)  # no two levels look alike
    for colour in colours.values():
        assert re.fullmatch(r"var\(--jp-[a-z0-9-]+, #[0-9a-f]{6}\)", colour), colour
    assert "__COLOURS__" not in ContextMeter._esm and "__MARK__" not in ContextMeter._esm
    assert "|| COLOURS.warning" in ContextMeter._esm  # an unknown level draws as a warning


@pytest.mark.parametrize(("level", "tokens"), LEVELS.items(), ids=LEVELS.keys())
def test_the_plain_line_colours_a_level_as_the_drawing_code_does(level: str,
                                                                 tokens: int) -> None:
    reading = MeterReading.of(state(tokens))
    assert reading.level == level
    mark = re.search(r'style="color:([^"]+)">●</span>', reading.html())
    assert mark is not None and mark.group(1) == drawing_colours()[level]
