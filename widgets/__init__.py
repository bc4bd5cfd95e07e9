"""nbagent.widgets: the notebook UI — the context meter and the chat display.

Shipped inside the wheel as `nbagent.widgets`; the source folder is `widgets/`.
Thin by design: rendering only, fed by the session's events. The magics are `ChatMagics`
(what `%load_ext nbagent` registers; each magic's docstring is its `--help`). Beside the
displays: the subscriber that makes proposed code the next cell (`CellProposals`), the
notebook's runner of the model's code (`NotebookRunner`, a `nbagent.code.CodeRunner`), and
which kind of front end runs the cell (`updates_in_place`: redrawn by display id, or
printed once).
"""

from __future__ import annotations

from ._cells import CellProposals
from ._chat import ChatDisplay
from ._code_runs import NotebookRunner
from ._frontend import updates_in_place
from ._magics import ChatMagics
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
    "CellProposals",
    "ChatDisplay",
    "ChatMagics",
    "ContextMeter",
    "MeterLine",
    "MeterReading",
    "NotebookRunner",
    "ProgressLine",
    "decision_words",
    "notebook_words",
    "show_breakdown",
    "show_decision",
    "show_error",
    "show_interrupted",
    "updates_in_place",
]
