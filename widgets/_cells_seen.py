"""The cells the user runs, recorded for the agent's next turn: `CellLog` hooks IPython's
pre/post_run_cell events and keeps each cell's code, what it printed (a bounded copy of
the kernel's stdout and stderr through their `echo`), its value and its error; the next
chat takes them (`take_note`) as a note before the message. Chat cells and nbagent's own
magics are not recorded; the `see_cells` setting turns the note off.
"""

from __future__ import annotations

import sys
import traceback
from typing import Any

from nbagent import Agent
from nbagent.code import BoundedText, RanCell, cells_note

KEEP_CELLS = 20  # cells kept between two chats (the note shows the newest that fit)
PRINTED_CHARS = 2_000  # head and tail of what one cell printed
_OURS = ("%%chat", "%chat", "%%nbagent", "%nbagent", "%compact", "%context", "%pin",
         "%load_ext nbagent", "%reload_ext nbagent")


class CellLog:
    """The cells run since the last chat took them."""

    def __init__(self) -> None:
        self.cells: list[RanCell] = []
        self._printed: BoundedText | None = None
        self._streams: list[Any] = []

    def pre_run_cell(self, info: Any) -> None:
        self._release()
        if _ours(getattr(info, "raw_cell", "") or ""):
            return
        self._printed = BoundedText(PRINTED_CHARS // 2, PRINTED_CHARS // 2)
        for stream in (sys.stdout, sys.stderr):
            # ipykernel's streams copy what they are given to `echo` (None when unused)
            if hasattr(stream, "echo") and stream.echo is None:
                stream.echo = self._printed
                self._streams.append(stream)

    def post_run_cell(self, result: Any) -> None:
        printed, self._printed = self._printed, None
        self._release()
        info = getattr(result, "info", None)
        code = getattr(info, "raw_cell", "") or ""
        if printed is None or _ours(code) or not code.strip():
            return
        error = result.error_in_exec or result.error_before_exec
        value = result.result
        self.cells.append(RanCell(
            result.execution_count, code, printed.text(),
            _text(value) if value is not None else "",
            "".join(traceback.format_exception(error)) if error is not None else ""))
        del self.cells[:-KEEP_CELLS]

    def _release(self) -> None:
        for stream in self._streams:
            if stream.echo is self._printed or isinstance(stream.echo, BoundedText):
                stream.echo = None
        self._streams = []

    def take_note(self, agent: Agent) -> str | None:
        """The note of the cells run since the last chat (None: none, or `see_cells` off);
        they are taken either way."""
        cells, self.cells = self.cells, []
        if not cells or not agent.settings().see_cells:
            return None
        return cells_note(cells)


def _ours(code: str) -> bool:
    return code.lstrip().startswith(_OURS)


def _text(value: Any) -> str:
    try:
        return repr(value)
    except Exception as error:
        return f"(a {type(value).__name__} whose repr raised {type(error).__name__})"


LOG = CellLog()


def with_cells_note(agent: Agent, message: str) -> str:
    """`message` with the note of the cells run since the last chat before it."""
    note = LOG.take_note(agent)
    return message if note is None else f"{note}\n\n{message}"


def register(shell: Any) -> None:
    """Record the cells `shell` runs (once per shell)."""
    callbacks = shell.events.callbacks
    if LOG.pre_run_cell not in callbacks["pre_run_cell"]:
        shell.events.register("pre_run_cell", LOG.pre_run_cell)
        shell.events.register("post_run_cell", LOG.post_run_cell)
