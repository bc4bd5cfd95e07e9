"""nbagent.widgets: the notebook UI — the context meter and the chat display.

Shipped inside the wheel as `nbagent.widgets`; the source folder is `widgets/`.
Thin by design: rendering only, fed by the session's events.
"""

from __future__ import annotations

from ._chat import ChatDisplay
from ._meter import ContextMeter, MeterLine, MeterReading
from ._report import (
    ProgressLine,
    decision_words,
    show_breakdown,
    show_decision,
    show_error,
    show_interrupted,
)
from ._texts import notebook_words

__all__ = [
    "ChatDisplay",
    "ContextMeter",
    "MeterLine",
    "MeterReading",
    "ProgressLine",
    "decision_words",
    "notebook_words",
    "show_breakdown",
    "show_decision",
    "show_error",
    "show_interrupted",
]
