"""The figure tests' parts, shared by tests/agent/tools/test_images.py, test_count_sent.py
and tests/real/test_figure_bodies.py: a code runner that shows the figure the code left in
`fig` as the notebook's runner shows it, and a scripted turn that plots once or more."""

from __future__ import annotations

import base64
import io
from pathlib import Path
from typing import Any

from nbagent import Agent, Settings
from nbagent.code import CodeResult, PlainRunner, Shown
from nbagent.testing import ScriptedModel, calls, reply

VISION = "gpt-4o"  # litellm's map: supports_vision
PLOT = "fig = Figure(); fig.add_subplot().plot([1, 3, 2]); 'plotted'"


class FigureRunner(PlainRunner):
    """The plain runner, plus each matplotlib figure the code left in `fig` as the
    notebook's runner shows it: an output with `image/png` (base64) and its text."""

    def run(self, code: str, namespace: dict[str, Any], label: str,
            explanation: str = "") -> CodeResult:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure as MplFigure

        namespace.setdefault("Figure", MplFigure)
        result = super().run(code, namespace, label, explanation)
        figure = namespace.pop("fig", None)
        if figure is not None:
            buffer = io.BytesIO()
            FigureCanvasAgg(figure).print_png(buffer)
            result.outputs.append(Shown(len(result.outputs) + 1,
                                        "<Figure size 400x300 with 1 Axes>",
                                        ("image/png", "text/plain"),
                                        base64.b64encode(buffer.getvalue()).decode()))
            result.text += "\n\noutput 2:\na line plot with 3 points"
        return result


def plotting_turn(name: str, *, data: Path | None = None, runs: int = 1) -> tuple[
        Agent, ScriptedModel]:
    """One chat on the scripted model `name` whose code plots `runs` times, then replies
    (archived under `data` when given); the agent and its model, every step consumed."""
    steps = [calls(("run_code", {"code": PLOT, "explanation": "plot it"}))
             for _ in range(runs)]
    model = ScriptedModel([*steps, reply("a rising then falling line")], name=name)
    agent = Agent(model=model, namespace={}, archive=data is not None,
                  settings=Settings(run_code="auto", data_dir=str(data) if data else None))
    agent.chat("plot it")
    model.assert_consumed()
    return agent, model
