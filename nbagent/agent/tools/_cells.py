"""Code the model proposes for a new notebook cell. A proposal is announced on the
session's event stream as `CellProposed` and never run. The kernel's next-input payload
holds one cell, so everything proposed since the user's latest message is joined into
one cell: each `CellProposed` carries the whole cell as it stands (the latest replaces
the earlier ones). The notebook room puts it below the chat cell.
"""

from __future__ import annotations

import threading

from ...engine._events import CellProposed, Event, EventStream, MessageAdded
from ...engine._markers import is_plain_user
from ._per_session import PerSession

SEPARATOR = "\n\n"


class CellDraft:
    """The pieces of code proposed since the user's latest message on one stream."""

    def __init__(self) -> None:
        self.pieces: list[str] = []
        self._lock = threading.Lock()

    def __call__(self, event: Event) -> None:
        """A subscriber: a new user message starts a new cell."""
        if isinstance(event, MessageAdded) and is_plain_user(event.message):
            with self._lock:
                self.pieces.clear()

    def add(self, piece: str) -> tuple[str, int]:
        """Join `piece` to the cell; return the whole cell and how many pieces it holds."""
        with self._lock:
            self.pieces.append(piece)
            return SEPARATOR.join(self.pieces), len(self.pieces)


cell_draft = PerSession(lambda events: CellDraft())  # a session's one draft (subscribed once)


def cell_piece(code: str, explanation: str) -> str:
    """The code as it goes into the cell, the explanation above it as comments."""
    comment = "\n".join(f"# {line}".rstrip() for line in explanation.strip().splitlines())
    body = code.strip("\n")
    return f"{comment}\n{body}" if comment else body


def propose(events: EventStream | None, code: str, explanation: str = "") -> str:
    """Announce `code` for a new cell below the chat cell; the text the model reads."""
    if not code.strip():
        return "Nothing proposed: the code is empty."
    if events is None:
        return ("No notebook cell can be added here (no session): show the code in your "
                "reply instead.")
    cell, pieces = cell_draft(events).add(cell_piece(code, explanation))
    events.emit(CellProposed(cell))
    lines = cell.count("\n") + 1
    if pieces == 1:
        return (f"Proposed a new code cell ({lines} lines) below the chat cell, for the user "
                "to review and run; nothing was run. Refer to it in your reply rather than "
                "repeating the code.")
    return (f"Added to the cell already proposed in this turn: only one new cell can be "
            f"placed below a chat cell, so it now holds {pieces} proposals ({lines} lines), "
            "for the user to review and run; nothing was run.")
