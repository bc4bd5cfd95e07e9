"""A chat where outputs cannot be redrawn (terminal IPython, jupyter console): each thing is
printed once. The reply streams as plain text on stdout as it arrives and is never printed
again; tool calls, compactions, retries, errors and the closing lines are one line each,
printed when they happen; the waiting lines ("thinking…") are left out, as a terminal
cannot take them back. Every text is stripped of control sequences first.
"""

from __future__ import annotations

import sys
from typing import Any

from IPython.display import display

from nbagent import ChatResult
from nbagent.events import Compacted, Retrying, ToolFinished, ToolStarted

from ._bundles import Bundle, inert, terminal_text
from ._chat import ChatDisplay, _tool_bundle, retry_words
from ._report import decision_bundle


class TerminalChat(ChatDisplay):
    """`ChatDisplay` for a front end that prints each output as text and keeps it."""

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
        """Tool calls, compactions and retries as one printed line each."""
        if isinstance(event, Retrying):
            if self.text:  # the stream broke; what comes next starts the text again
                self._end_line()
                self.text = ""
            self._append(inert({"text/plain": retry_words(event.error, event.wait_s)}))
        elif isinstance(event, Compacted):
            if event.decision.action in ("compacted", "failed"):
                self._append(decision_bundle(event.decision))
        elif isinstance(event, ToolStarted):
            self._end_line()
            self._calls[event.call_id] = (event.name, event.arguments)
            self.text = ""
        elif isinstance(event, ToolFinished):
            name, arguments = self._calls.get(event.call_id, (event.name, ""))
            self._append(_tool_bundle(event, name, arguments))

    def _final_reply(self, result: ChatResult) -> None:
        """The reply once: printed now only if it did not stream."""
        if result.text and not self.text:
            self._write(terminal_text(result.text))
        self._end_line()
