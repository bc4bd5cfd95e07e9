"""The cells the user runs, recorded for the agent's next turn: `CellLog` hooks IPython's
pre/post_run_cell events and keeps each cell's code, what it printed (a bounded copy of
the kernel's stdout and stderr through their hooks; in a terminal, of the cell's own
writes to them), its value and its error — the secrets they carry hidden by the
listing's rule (`hide_secrets`); the next
chat carries them (`noted`) as a note before the message. Taking them is a transaction:
they are the note's once its user message is in the history, and go back for the next
chat when the chat failed before that (a `BusyError`, a failure before sending); re-running
a chat cell, which replaces its exchange, carries its cells again. Chat cells and
nbagent's own magics are not recorded; the `see_cells` setting turns the note off.
"""

from __future__ import annotations

import functools
import sys
import threading
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

from nbagent import Agent
from nbagent.code import BoundedText, RanCell, cells_note, hide_secrets
from nbagent.text import terminal_text

KEEP_CELLS = 20  # cells kept between two chats (the note shows the newest that fit)
PRINTED_CHARS = 2_000  # head and tail of what one cell printed
_OURS = ("%%chat", "%chat", "%%nbagent", "%nbagent", "%compact", "%context", "%pin",
         "%load_ext nbagent", "%reload_ext nbagent")


@dataclass(frozen=True)
class Taken:
    """The cells one chat took and the note made of them (None: none, or `see_cells` off)."""

    cells: list[RanCell]
    note: str | None
    again: Taken | None = None  # what the exchange it replaces carried, if it does
    fresh: int = 0  # how many of `cells` (the last) were run since the last chat took them


class CellLog:
    """The cells run since the last chat took them, and what each chat cell's exchange
    carries while its message is in the history (a re-run of the cell replaces it)."""

    def __init__(self) -> None:
        self.cells: list[RanCell] = []
        self._printed: BoundedText | None = None
        self._watched: list[tuple[Any, Callable[[Any], Any]]] = []  # (stream, its hook)
        self._carried: dict[str, Taken] = {}  # exchange (cell id) → what its message holds
        self.namespace: dict[str, Any] | None = None  # the shell's (`register`)

    def pre_run_cell(self, info: Any) -> None:
        self._release()
        if _ours(getattr(info, "raw_cell", "") or ""):
            return
        self._printed = BoundedText(PRINTED_CHARS // 2, PRINTED_CHARS // 2)
        for name in ("stdout", "stderr"):
            stream = getattr(sys, name)
            hook = _watch(stream, self._printed)
            if hook is not None:
                self._watched.append((stream, hook))
            else:  # a terminal's own stream (no kernel hooks): copied on its way out
                setattr(sys, name, _Tee(name, stream, self._printed))

    def post_run_cell(self, result: Any) -> None:
        for stream, _ in self._watched:
            stream.flush()  # what the cell printed reaches its hook (it waits for the send)
        printed, self._printed = self._printed, None
        self._release()
        info = getattr(result, "info", None)
        code = getattr(info, "raw_cell", "") or ""
        if printed is None or _ours(code) or not code.strip():
            return
        error = result.error_in_exec or result.error_before_exec
        value = result.result
        # a secret is hidden by the values its variables hold now: one deleted before the
        # next chat would be missed then
        self.cells.append(hide_secrets(RanCell(
            result.execution_count, code, _without_out(printed, result.execution_count, value),
            _text(value) if value is not None else "",
            "".join(traceback.format_exception(error)) if error is not None else ""),
            self.namespace))
        del self.cells[:-KEEP_CELLS]

    def _release(self) -> None:
        for stream, hook in self._watched:
            _in_io_thread(stream, functools.partial(stream.unregister_hook, hook))
        self._watched = []
        for name in ("stdout", "stderr"):
            current = getattr(sys, name)
            if isinstance(current, _Tee):
                setattr(sys, name, current.stream)

    def take(self, agent: Agent, exchange: str | None) -> Taken:
        """The cells for a chat in `exchange`: those run since the last chat took them,
        after those its earlier exchange carried when that message is still in the history
        (the chat replaces it, so they would leave with it). Settle with `settle`."""
        sent = _user_texts(agent)
        # an exchange whose message left the history (compacted, another session) can no
        # longer be replaced: what it carried is the model's
        self._carried = {key: taken for key, taken in self._carried.items()
                         if _carries(sent, taken.note)}
        again = self._carried.pop(exchange, None) if exchange is not None else None
        if again is not None:  # one step back only: a cell re-run many times holds no chain
            again = replace(again, again=None)
        # the same bound as between two chats, however often the cell is run again
        cells = [*(again.cells if again is not None else []), *self.cells][-KEEP_CELLS:]
        fresh = min(len(self.cells), len(cells))
        self.cells = []
        # the namespace's secrets as they are now, beside those hidden when each cell ran
        note = cells_note(cells, namespace=agent.namespace) if cells and \
            agent.settings().see_cells else None
        return Taken(cells, note, again, fresh)

    def settle(self, taken: Taken, agent: Agent, exchange: str | None) -> None:
        """After the chat, however it ended: the cells are the note's when its user
        message is in the history (the loop keeps it through an error or an interrupt);
        otherwise the chat failed before sending them and they go back, first in line."""
        if taken.note is None:  # nothing to carry, or the user turned the note off
            return
        sent = _user_texts(agent)
        if _carries(sent, taken.note):
            if exchange is not None:
                self._carried[exchange] = taken
            return
        back = taken.cells
        if taken.again is not None and exchange is not None and _carries(sent, taken.again.note):
            self._carried[exchange] = taken.again  # the earlier exchange was not replaced
            back = taken.cells[len(taken.cells) - taken.fresh:]
        self.cells = [*back, *self.cells][-KEEP_CELLS:]


def _without_out(printed: BoundedText, number: int | None, value: Any) -> str:
    """What the cell printed, control-free, less the `Out[n]: …` a terminal shell prints
    for its value (the note carries the value on its own)."""
    text = terminal_text(printed.text())
    if value is None or number is None:
        return text
    start = text.rfind(f"Out[{number}]: ")
    return text[:start] if start >= 0 else text


def _ours(code: str) -> bool:
    return code.lstrip().startswith(_OURS)


def _text(value: Any) -> str:
    try:
        return repr(value)
    except Exception as error:
        return f"(a {type(value).__name__} whose repr raised {type(error).__name__})"


def _watch(stream: Any, printed: BoundedText) -> Callable[[Any], Any] | None:
    """Copy what the running cell prints on `stream` (an ipykernel `OutStream`; None for
    any other) into `printed` through the stream's own hooks, which see each message it
    sends: only those of the cell's request, passed on unchanged."""
    if not callable(getattr(stream, "register_hook", None)) or \
            getattr(stream, "pub_thread", None) is None:
        return None
    request = (getattr(stream, "parent_header", None) or {}).get("msg_id")

    def hook(message: Any) -> Any:
        if (message.get("parent_header") or {}).get("msg_id") == request:
            printed.write(str(message.get("content", {}).get("text", "")))
        return message

    _in_io_thread(stream, functools.partial(stream.register_hook, hook))
    return hook


class _Tee:
    """A terminal's stream while the user's cell runs: what the cell's own thread writes is
    copied into the cell's printed text, and goes out as before (other threads' writes
    only go out: a run of the model's code that went on unseen is not the cell's)."""

    def __init__(self, name: str, stream: Any, printed: BoundedText) -> None:
        self.name, self.stream, self.printed = name, stream, printed
        self.thread = threading.get_ident()

    def write(self, text: str) -> int:
        if threading.get_ident() == self.thread:
            self.printed.write(text)
        return int(self.stream.write(text) or 0)

    def flush(self) -> None:
        self.stream.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def _in_io_thread(stream: Any, call: Callable[[], Any]) -> None:
    # a stream's hooks are thread-local and its sends run in its IO thread: (un)register
    # there, in order with the flushes scheduled after (at once when that thread is gone)
    stream.pub_thread.schedule(call)


LOG = CellLog()


def _user_texts(agent: Agent) -> list[str]:
    return [str(m.get("content") or "") for m in agent.history.messages
            if m.get("role") == "user"]


def _carries(sent: list[str], note: str | None) -> bool:
    """Whether a user message opens with `note` (a floor's copy of it inside a compaction
    block does not count: that block is no exchange a chat could replace)."""
    return note is not None and any(text.startswith(note) for text in sent)


@contextmanager
def noted(agent: Agent, message: str, exchange: str | None) -> Iterator[str]:
    """`message` with the note of the cells run since the agent last saw them before it,
    for the chat the block runs in `exchange`; when the block ends the cells are settled
    (`CellLog.settle`), so a chat that fails before sending them loses none."""
    taken = LOG.take(agent, exchange)
    try:
        yield message if taken.note is None else f"{taken.note}\n\n{message}"
    finally:
        LOG.settle(taken, agent, exchange)


def register(shell: Any) -> None:
    """Record the cells `shell` runs (once per shell)."""
    LOG.namespace = shell.user_ns
    callbacks = shell.events.callbacks
    if LOG.pre_run_cell not in callbacks["pre_run_cell"]:
        shell.events.register("pre_run_cell", LOG.pre_run_cell)
        shell.events.register("post_run_cell", LOG.post_run_cell)
