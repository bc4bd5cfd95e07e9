"""How a chat shows in a cell: the reply rendered to inert HTML (`_render`) and redrawn on
a steady cadence while it streams, one status line under it while the agent waits
("thinking…", "running describe(…)…"), tool calls as one collapsible line each (a
delegated task's call as its own line, redrawn with its progress),
compactions, errors and interrupts as one readable line. Every output carries text/plain
beside its HTML, free of control sequences. Where the front end cannot redraw an output
(terminal IPython, jupyter console), `ChatDisplay()` is a `TerminalChat`: each thing printed
once. What each line looks like is `_chat_lines`'.
"""

from __future__ import annotations

import html
import sys
import time
from collections.abc import Callable
from typing import Any

from IPython.display import display

from nbagent import ChatResult
from nbagent.events import (
    BranchFinished,
    BranchProgress,
    BranchStarted,
    Compacted,
    CompactionStarted,
    Notice,
    Retrying,
    Status,
    ToolFinished,
    ToolStarted,
)
from nbagent.text import money, tool_call

from ._bundles import (
    Bundle,
    error_bundle,
    inert,
    inline_code,
    line,
    plain_line,
    status_bundle,
    terminal_text,
)
from ._chat_lines import RUNNING_CHARS, BranchLine, reply_bundle, retry_words, tool_bundle
from ._frontend import updates_in_place
from ._report import decision_bundle, error_parts
from ._texts import (
    INTERRUPTED,
    NO_CODE,
    PROPOSED,
    REPLACED,
    SMALL_MODEL_FOOTER,
    notebook_words,
)

UPDATE_EVERY_S = 0.1  # redraw the streaming reply at most this often, and at least this often
# A redraw renders the whole reply again: its interval stays this many times what the last
# render took, so a very long reply costs the kernel a bounded share of its time.
RENDER_SHARE = 10
CONTINUE_HINT = (
    "the reply was cut at the model's output limit — send `%chat continue` for the rest"
)


class ChatDisplay:
    """One cell's view of a chat. Subscribe it to the session's events and pass
    `on_text=view.on_text`; call `view.status("thinking…")` before the request and
    `view.finish(result)` after. `clock` is for tests.

    Made where the front end cannot redraw an output in place (terminal IPython, jupyter
    console), it is a `TerminalChat`, which prints each thing once (as `pathlib.Path()`
    is a `PosixPath`); `live=True` or `False` chooses."""

    def __new__(cls, *args: Any, live: bool | None = None, **kwargs: Any) -> ChatDisplay:
        if cls is ChatDisplay and not (updates_in_place() if live is None else live):
            cls = TerminalChat
        return super().__new__(cls)

    def __init__(self, *, clock: Callable[[], float] | None = None,
                 every_s: float = UPDATE_EVERY_S, live: bool | None = None) -> None:
        self.text = ""  # the text block streaming now
        self._clock = clock or time.monotonic
        # a render's cost: a test's clock too (so a test is not timed), else the finest one
        self._render_clock = clock or time.perf_counter
        self._every_s = every_s
        self._interval = every_s  # every_s, or longer while a long reply takes time to render
        self._block: Any = None  # the display handle of the streaming text
        self._drawn_at: float | None = None
        self._drawn = ""
        self._slot: Any = None  # the status line's handle: always the cell's last output
        self._status = ""
        self._calls: dict[str, tuple[str, str]] = {}
        self._running: str | None = None  # the tool call running now
        self._branches: dict[int, BranchLine] = {}  # delegated tasks, by number
        self._branch_calls: set[str] = set()  # the calls whose line is their branch's

    def _append(self, bundle: Bundle) -> Any:
        """Add an output at the bottom of the cell, keeping the status line under it."""
        if self._slot is not None:
            handle, self._slot = self._slot, None
            handle.update(bundle, raw=True)
        else:
            handle = display(bundle, raw=True, display_id=True)
        if self._status:
            self._slot = display(status_bundle(self._status), raw=True, display_id=True)
        return handle

    def status(self, text: str) -> None:
        """Show `text` as the one status line under the output ("" hides it)."""
        self._flush()
        if text == self._status:
            return
        self._status = text
        if self._slot is not None:
            self._slot.update(status_bundle(text), raw=True)
        elif text:
            self._slot = display(status_bundle(text), raw=True, display_id=True)

    def on_text(self, delta: str) -> None:
        """Streamed reply text: shown at once, then redrawn every `every_s` while it flows."""
        if not delta:
            return
        self.text += delta
        now = self._clock()
        if self._block is None:
            self._status = ""  # the text takes the status line's place
            self._block = self._append(reply_bundle(self.text))
            self._drawn_at, self._drawn = now, self.text
        elif self._status:
            self.status("")
        if self._drawn_at is None or now - self._drawn_at >= self._interval:
            self._draw(now)

    def _draw(self, now: float) -> None:
        if self._block is not None and self._drawn != self.text:
            started = self._render_clock()
            bundle = reply_bundle(self.text)
            spent = self._render_clock() - started
            self._interval = max(self._every_s, RENDER_SHARE * spent)
            self._block.update(bundle, raw=True)
        self._drawn_at, self._drawn = now, self.text

    def _flush(self) -> None:
        if self._block is not None and self._drawn != self.text:
            self._draw(self._clock())

    def __call__(self, event: object) -> None:
        """A subscriber: status lines, tool lines and compaction lines from events."""
        if isinstance(event, Status):
            self.status(notebook_words(event.text))
        elif isinstance(event, Notice):  # a line to keep (an MCP server restarted, changed)
            self._flush()
            self.note(event.text)
        elif isinstance(event, Retrying):
            if self.text and self._block is not None:  # the stream broke: it starts again
                self.text, self._drawn_at = "", None
                self._block.update({"text/plain": ""}, raw=True)
                self._drawn = ""
            self.status(retry_words(event.error, event.wait_s, event.reason))
        elif isinstance(event, CompactionStarted):
            self.status("compacting…")
        elif isinstance(event, Compacted):
            self._status = ""  # compaction is over; the line below takes the status's place
            if event.decision.action in ("compacted", "failed"):
                self._flush()
                self._append(decision_bundle(event.decision))
            elif self._slot is not None:
                self._slot.update(status_bundle(""), raw=True)
        elif isinstance(event, ToolStarted):
            self._flush()
            self._calls[event.call_id] = (event.name, event.arguments)
            self._running = event.call_id
            self._block, self.text = None, ""  # text after a tool call starts a new block
            self.status(f"running {tool_call(event.name, event.arguments, RUNNING_CHARS)}…")
        elif isinstance(event, ToolFinished):
            if event.call_id not in self._branch_calls:  # a branch's line is its call's
                name, arguments = self._calls.get(event.call_id, (event.name, ""))
                self._append(tool_bundle(event, name, arguments))
            self.status("thinking…")
        else:
            self._branch(event)

    def _branch(self, event: object) -> None:
        """A delegated task's one line: drawn when it starts (the line of the tool call
        running it), redrawn as it works and when it ends."""
        if isinstance(event, BranchStarted):
            self._flush()
            started = self._branches[event.number] = BranchLine(event.number, event.task,
                                                                event.model)
            if self._running is not None:
                self._branch_calls.add(self._running)
            self._draw_branch(started)
            return
        number = event.number if isinstance(event, BranchProgress) else \
            event.branch.number if isinstance(event, BranchFinished) else None
        line = self._branches.get(number) if number is not None else None
        if line is None:
            return
        if isinstance(event, BranchFinished):
            line.ended = event.branch
        elif not (isinstance(event, BranchProgress) and line.see(event.event)):
            return
        self._draw_branch(line)

    def _draw_branch(self, line: BranchLine) -> None:
        if line.handle is None:
            line.handle = self._append(line.bundle())
        else:
            line.handle.update(line.bundle(), raw=True)  # type: ignore[attr-defined]

    def error(self, message: str) -> None:
        """The chat failed: what streamed stays, then the error in one line."""
        self._end()
        self._append(error_bundle(*error_parts(message)))

    def interrupted(self, text: str = INTERRUPTED) -> None:
        """The user interrupted: what streamed stays, then one line instead of a traceback."""
        self._end()
        self._append(line("nbagent-interrupted", f"<i>{html.escape(text)}</i>", text))

    def _end(self) -> None:
        self._flush()
        self.status("")
        # the status line may sit above what a tool showed while it ran (a run of the
        # model's code, stopped by this interrupt): the closing line goes under it all
        self._slot = None

    def finish(self, result: ChatResult, *, cell_asked: bool = False, proposed: bool = False,
               small_model: bool = False) -> None:
        """The chat ended: draw the whole reply, clear the status, then every line under it,
        decided here and nowhere else (a new notice is its words in `_texts` and a line
        here): why it stopped, the cost, and, from the caller's facts, whether a cell was
        asked for (`cell_asked`) and one proposed (`proposed`), and the small model's footer."""
        self._final_reply(result)
        self.status("")
        if getattr(result, "truncated", False):
            self._append(line("nbagent-truncated", "⋯ " + inline_code(CONTINUE_HINT),
                               f"⋯ {CONTINUE_HINT}"))
        if result.stop_message:
            stop = notebook_words(result.stop_message)
            self._append(line("nbagent-stop", f"<i>{html.escape(stop)}</i>", stop))
        if result.replaced:
            self._append(plain_line("nbagent-replaced", REPLACED))
        if result.cost:
            self._append(plain_line("nbagent-cost", f"this cell cost {money(result.cost)}"))
        if cell_asked and not proposed:
            self.note(NO_CODE)
        if proposed:
            self.note(PROPOSED, "nbagent-proposed")
        if small_model:
            self.note(SMALL_MODEL_FOOTER)

    def _final_reply(self, result: ChatResult) -> None:
        if self._block is not None:
            self._flush()
        elif result.text and not self.text:  # a model that did not stream
            self._status = ""
            self._append(reply_bundle(result.text))

    def note(self, text: str, css_class: str = "nbagent-note") -> None:
        """One more line under the chat, in notebook words (`finish` adds the closing ones)."""
        self._append(plain_line(css_class, notebook_words(text)))


class TerminalChat(ChatDisplay):
    """`ChatDisplay` for a front end that prints each output as text and keeps it: the
    reply streams as plain text on stdout and is never printed again; tool calls,
    compactions, retries, errors and the closing lines are one line each, printed when
    they happen; waiting lines ("thinking…") are left out, as a terminal cannot take them
    back."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._open_line = False  # streamed text not yet ended by a newline

    def _append(self, bundle: Bundle) -> Any:
        self._end_line()
        display(inert(bundle), raw=True)
        return None

    def _end_line(self) -> None:
        if self._open_line:
            self._write("\n")

    def _write(self, text: str) -> None:
        sys.stdout.write(text)
        sys.stdout.flush()
        self._open_line = not text.endswith("\n")

    def status(self, text: str) -> None:
        """Waiting lines are not printed: a terminal could not take them back."""
        self._status = text

    def on_text(self, delta: str) -> None:
        """Streamed reply text, printed as it arrives and never again."""
        if delta:
            self.text += delta
            self._write(terminal_text(delta))

    def _flush(self) -> None:
        """Nothing to redraw: every delta was printed as it came."""

    def __call__(self, event: object) -> None:
        """Tool calls, compactions, retries and notices as one printed line each."""
        if isinstance(event, Notice):
            self._end_line()
            self.note(event.text)
        elif isinstance(event, Retrying):
            if self.text:  # the stream broke; what comes next starts the text again
                self._end_line()
                self.text = ""
            words = retry_words(event.error, event.wait_s, event.reason)
            self._append(inert({"text/plain": words}))
        elif isinstance(event, Compacted):
            if event.decision.action in ("compacted", "failed"):
                self._append(decision_bundle(event.decision))
        elif isinstance(event, ToolStarted):
            self._end_line()
            self._calls[event.call_id] = (event.name, event.arguments)
            self._running = event.call_id
            self.text = ""
        elif isinstance(event, ToolFinished):
            if event.call_id not in self._branch_calls:
                name, arguments = self._calls.get(event.call_id, (event.name, ""))
                self._append(tool_bundle(event, name, arguments))
        else:  # the notebook's branch, printed by this class's `_append` and `status`, so an
            super().__call__(event)  # event given a line there is never lost in a terminal

    def _draw_branch(self, line: BranchLine) -> None:
        """A delegated task is printed once, when it ends (its summary line)."""
        if line.ended is not None:
            self._append(line.bundle())

    def _final_reply(self, result: ChatResult) -> None:
        """The reply once: printed now only if it did not stream."""
        if result.text and not self.text:
            self._write(terminal_text(result.text))
        self._end_line()
