"""The MCP SDK's own log records (a stray non-JSON line on a server's stdout, a read that
failed mid-session) as one status line for the server they concern, instead of a
traceback on the notebook's stderr: Python's last-resort handler prints warnings and
their tracebacks there when no logging is configured, as in a fresh kernel.

A handler on the SDK's `mcp` logger reads which server the record is about from a context
variable each connection sets in its own task (the SDK's reader tasks inherit it).
Logging the user configured still receives the records. `once_per_kind` is the reporter
each session gets: a line said once however often it recurs. `HeldLines` keeps the lines
said on the MCP loop for the thread that called, which shows them.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable
from contextvars import ContextVar

Reporter = Callable[[str], None]
CURRENT: ContextVar[Reporter | None] = ContextVar("nbagent_mcp_reporter", default=None)
# The SDK logs a bad line and then hands the same exception to the session's message
# handler; the ids of the ones already said let the handler stay quiet about them.
REPORTED: deque[int] = deque(maxlen=64)
_installed = threading.Lock()
_HANDLER: _ToStatus | None = None


def reason(error: BaseException) -> str:
    """One short line for an exception (pydantic's first error, not its header)."""
    details = getattr(error, "errors", None)
    if callable(details):
        try:
            first = details()[0]
            return f"{first['msg']}"[:160]
        except Exception:
            pass
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[0][:120]}" if lines else type(error).__name__


class _ToStatus(logging.Handler):
    """Each warning or error record of the SDK, as one line to its server's reporter."""

    def emit(self, record: logging.LogRecord) -> None:
        report = CURRENT.get()
        if report is None:
            return
        try:
            message = record.getMessage().strip().rstrip(".")
            if record.exc_info and record.exc_info[1] is not None:
                REPORTED.append(id(record.exc_info[1]))
                message = f"{message} ({reason(record.exc_info[1])})"
            report(message[:300])
        except Exception:  # a log record must never break the session that logged it
            pass


def install() -> None:
    """Attach the handler to the SDK's logger once (idempotent)."""
    global _HANDLER
    with _installed:
        if _HANDLER is None:
            _HANDLER = _ToStatus(logging.WARNING)
            logging.getLogger("mcp").addHandler(_HANDLER)


def once_per_kind(name: str, say: Reporter) -> Reporter:
    """A reporter for one session of the server `name`: each kind of line (the SDK's log
    records, a stray line on stdout) is said once, however often it happens."""
    said: set[str] = set()

    def report(text: str) -> None:
        key = text[:60]
        if key not in said:
            said.add(key)
            say(f"MCP server {name!r}: {text}")

    return report


class HeldLines:
    """Lines for the user, held until the caller's thread takes them (`deliver`): a line
    written from the MCP loop's own thread could land in another cell. A line holding
    `urgent` (a sign-in the user must act on while the start waits) is given at once.

    Args:
        say: gives the callable that shows a line now (None: nothing is shown).
        urgent: the words of a line that cannot wait.
    """

    def __init__(self, say: Callable[[], Reporter | None], urgent: str) -> None:
        self._say = say
        self._urgent = urgent
        self._held: list[str] = []
        self._guard = threading.Lock()

    def hold(self, text: str) -> None:
        if self._urgent in text:
            self._show(text)
            return
        with self._guard:
            self._held.append(text)

    def deliver(self) -> None:
        """Show the lines held so far, in this (the caller's) thread."""
        with self._guard:
            lines, self._held = self._held, []
        for line in lines:
            self._show(line)

    def _show(self, text: str) -> None:
        say = self._say()
        if say is not None:
            try:
                say(text)
            except Exception:  # a broken hook must not break the call
                pass
