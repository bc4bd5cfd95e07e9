"""`Shortcuts`: the archive's typed calls for records written by hand (tests and
bench/archive_scale; a session records its events instead): each makes its event and
goes through the kinds table like a session's records (`Archive.record`), so there is
one way to write a record, whoever writes it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ...engine._events import Compacted, MessageAdded, OutputStored, Rewriting
from ._kinds import SessionStarted, kind_of


class Shortcuts:
    """Mixed into `Archive`, which gives `record` and `write`."""

    def record(self, event: object, *, snapshot: Any = None) -> bool:
        raise NotImplementedError

    def write(self, kind: str, payload: Mapping[str, Any], *, sync: bool = False,
              snapshot: Any = None) -> bool:
        raise NotImplementedError

    def write_session(self, model: str, session_id: str) -> None:
        """The session's start (or a resume): its model and id; the writer adds its
        `sequence` (its place among the sessions in its data folder: what "latest" means)."""
        self.record(SessionStarted(model, session_id))

    def write_message(self, message: Mapping[str, Any]) -> None:
        self.record(MessageAdded(dict(message)))

    def write_output(self, ref: str, text: str) -> None:
        """A full tool output, for `output(ref)` to give back after it left memory."""
        self.record(OutputStored(ref, text))

    def write_rewrite(self, messages: Sequence[Mapping[str, Any]]) -> None:
        """The history a compaction is about to swap in, synced before the swap."""
        self.record(Rewriting([dict(m) for m in messages]))

    def write_decision(self, decision: Mapping[str, Any]) -> None:
        """A decision record as a dict (a session's come from `Compacted` events)."""
        self.write(kind_of(Compacted), {"decision": decision})
