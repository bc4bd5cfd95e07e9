"""nbagent.widgets: the notebook UI — the context meter and the chat display.

Shipped inside the wheel as `nbagent.widgets`; the source folder is `widgets/`.
Thin by design: rendering only, fed by the session's events. The magics are `ChatMagics`
(what `%load_ext nbagent` registers; each magic's docstring is its `--help`). Beside the
displays: the subscriber that makes proposed code the next cell (`CellProposals`), the
notebook's runner of the model's code (`NotebookRunner`, a `nbagent.code.CodeRunner`), and
which kind of front end runs the cell (`updates_in_place`: redrawn by display id, or
printed once). Its tables: each magic's options (`MAGIC_OPTIONS`, read by `parse_line`) and
`%nbagent`'s subcommands (`SUBCOMMANDS` of `Subcommand` rows, a line matched by `select`;
`SETTINGS`, the settings form). The lines it draws, for its tests and the benches: a reply
(`reply_bundle`, `render_reply` within `TAGS` and `allowed_link`, `copy_button`), a tool
call (`tool_bundle`), a status or plain line (`status_bundle`, `plain_line`, `clean_cut`), a
retry (`retry_words`), a decision (`compaction_text`, `left_view_words`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._bundles import clean_cut, plain_line, status_bundle
from ._cells import CellProposals
from ._chat import ChatDisplay
from ._chat_lines import copy_button, reply_bundle, retry_words, tool_bundle
from ._code_runs import NotebookRunner
from ._frontend import updates_in_place
from ._magics import ChatMagics
from ._meter import MeterLine
from ._parse import MAGIC_OPTIONS, parse_line
from ._reading import MeterReading, compaction_text
from ._render import TAGS, allowed_link, render_reply
from ._report import (
    ProgressLine,
    decision_words,
    left_view_words,
    show_breakdown,
    show_decision,
    show_error,
    show_interrupted,
)
from ._subcommands import SETTINGS, SUBCOMMANDS, Subcommand, select
from ._texts import notebook_words

if TYPE_CHECKING:
    from ._meter_widget import ContextMeter

__all__ = [
    "MAGIC_OPTIONS",
    "SETTINGS",
    "SUBCOMMANDS",
    "TAGS",
    "CellProposals",
    "ChatDisplay",
    "ChatMagics",
    "ContextMeter",
    "MeterLine",
    "MeterReading",
    "NotebookRunner",
    "ProgressLine",
    "Subcommand",
    "allowed_link",
    "clean_cut",
    "compaction_text",
    "copy_button",
    "decision_words",
    "left_view_words",
    "notebook_words",
    "parse_line",
    "plain_line",
    "render_reply",
    "reply_bundle",
    "retry_words",
    "select",
    "show_breakdown",
    "show_decision",
    "show_error",
    "show_interrupted",
    "status_bundle",
    "tool_bundle",
    "updates_in_place",
]


def __getattr__(name: str) -> Any:
    """`ContextMeter` loads on first use (PEP 562): anywidget and ipywidgets behind it cost
    a kernel ~3.5 MB that a chat never needs (docs/performance.md)."""
    if name == "ContextMeter":
        from ._meter_widget import ContextMeter

        globals()[name] = ContextMeter
        return ContextMeter
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
