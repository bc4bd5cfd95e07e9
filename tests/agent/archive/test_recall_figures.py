"""Recall searches and shows the text of a figures message, never its base64: a slice of
the PNG data finds nothing, and each image part shows as a short placeholder naming the
figure and its size (issue 33 follow-up)."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path

from nbagent.agent.archive import Archive, recall
from nbagent.agent.tools import Figure, images_message


def real_png(width_in: float, height_in: float) -> str:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure as MplFigure

    figure = MplFigure(figsize=(width_in, height_in), dpi=100)
    figure.add_subplot().plot([(i * 7919) % 101 for i in range(300)])
    buffer = io.BytesIO()
    FigureCanvasAgg(figure).print_png(buffer)
    return base64.b64encode(buffer.getvalue()).decode()


def test_a_figures_message_is_searched_and_shown_as_text(tmp_path: Path) -> None:
    png = real_png(6.4, 4.8)
    figures = images_message([Figure(png, "agent run 3, figure 1")])
    assert figures is not None
    with Archive("s1", tmp_path) as archive:
        archive.write_session("scripted", "s1")
        archive.write_message({"role": "user", "content": "plot the sales"})
        archive.write_message(figures)
        # slices of the data from its middle (the PNG signature is shared by every figure)
        for at in (200, len(png) // 2, len(png) - 40):
            assert recall(archive, png[at: at + 4]).startswith("0 archived messages"), at
        found = recall(archive, "agent run 3")
        assert found.splitlines()[0].startswith("1 archived messages match")
        assert "[image 1: agent run 3, figure 1, 640×480 PNG]" in found
        assert png[100:140] not in found and "base64" not in found
        whole = json.loads(recall(archive, message=1))
        assert whole["role"] == "user" and png[100:140] not in json.dumps(whole)
        assert "image 1: agent run 3, figure 1" in whole["content"]
        assert "[image 1: agent run 3, figure 1, 640×480 PNG]" in whole["content"]
        # the archive keeps the figure whole: only what recall shows is text
        assert png in archive.path.read_text()
