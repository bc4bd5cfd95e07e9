"""A compaction the model asks for (the `compact_context` tool): kept as pending until the
turn that asked ends — the next turn boundary, every tool call answered — where the loop
runs it as `%compact` runs (`controller.compact_now`: the same line in the chat cell, and
undoable as `%compact` is, since nothing joins the history after it until the user's next
message), at most once in `EVERY_TURNS` turns of the user's.
"""

from __future__ import annotations

from collections.abc import Callable

from . import _texts as texts

EVERY_TURNS = 3  # a model-asked compaction at most once in this many user turns


class AskedCompaction:
    """The model's pending request, and when it last ran.

    Args:
        turns: the number of user turns the session has opened so far.
        enabled: whether compaction may run (the user's `disable_compact` is not set).
    """

    def __init__(self, turns: Callable[[], int], enabled: Callable[[], bool]) -> None:
        self._turns, self._enabled = turns, enabled
        self.pending: str | None = None
        self.last: int | None = None  # the turn the last asked compaction ran in

    def ask(self, focus: str = "") -> str:
        """Note a request (the tool's answer to the model says whether it was taken)."""
        if not self._enabled():
            return texts.ASKED_COMPACTION_OFF
        if self.pending is not None:
            return texts.ASKED_COMPACTION_PENDING
        if self.last is not None and self._turns() - self.last < EVERY_TURNS:
            ago = self._turns() - self.last
            return texts.ASKED_COMPACTION_TOO_SOON.format(
                ago="in this turn" if ago == 0 else f"{ago} turn{'s' if ago > 1 else ''} ago",
                every=EVERY_TURNS)
        self.pending = " ".join(focus.split())
        return texts.ASKED_COMPACTION_TAKEN

    def take(self) -> str | None:
        """The pending request's focus ("" for none) to run now, or None; taken once."""
        focus, self.pending = self.pending, None
        if focus is not None:
            self.last = self._turns()
        return focus
