"""Reading a session back: `replay` streams an archive once, record by record through the
rows of `_kinds.KINDS`, and keeps only what a live session keeps — the history as it last
stood, the cells' exchanges, the undo point, the breaker count — while full tool outputs
stay on disk, read back by offset (`ArchivedOutputs`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...engine._exceptions import ArchiveError
from ._kinds import BY_KIND, ReplayState
from ._private_files import open_for_reading
from ._records import read_at, read_lines

Message = dict[str, Any]
_OUTPUT_LINE = b'{"kind": "output"'


class ArchivedOutputs(Mapping[str, str]):
    """Full tool outputs by ref, each read from the archive when asked (never all held)."""

    def __init__(self, path: Path, offsets: Mapping[str, int]) -> None:
        self.path, self.offsets = path, dict(offsets)

    def __getitem__(self, ref: str) -> str:
        record = read_at(self.path, self.offsets[ref])
        text = record.get("text") if record is not None and record.get("ref") == ref else None
        if not isinstance(text, str):
            raise KeyError(ref)
        return text

    def __iter__(self) -> Iterator[str]:
        return iter(self.offsets)

    def __len__(self) -> int:
        return len(self.offsets)


@dataclass(frozen=True)
class Replay:
    """A session as its archive last left it: what `Agent.resume` rebuilds from."""

    path: Path
    session_id: str
    model: str | None  # the model of the latest session record
    messages: list[Message]  # messages appended, rewrites replacing
    outputs: Mapping[str, str] = field(default_factory=dict)  # full tool outputs by ref
    failures: int = 0  # the breaker's count in the last decision
    exchanges: dict[str, Message] = field(default_factory=dict)  # cell key -> its message
    undo: list[Message] | None = None  # the history before the last compaction, if undoable
    sequence: int = 0  # the session's place among its data folder's sessions


def replay(path: str | Path) -> Replay:
    """Read a whole archive back; an archive without a session in it is an `ArchiveError`."""
    path = Path(path)
    state = ReplayState(path.stem)
    for offset, _, record in read_lines(path):
        row = BY_KIND.get(record["kind"])
        if row is not None:  # a kind this version does not know is passed over
            row.replay(state, record, offset)
    if not state.messages or state.messages[0].get("role") != "system":
        raise ArchiveError(f"{path.name} holds no session to resume ({path})")
    return Replay(path, state.session_id, state.model, state.messages,
                  ArchivedOutputs(path, state.outputs), state.failures, state.exchanges,
                  state.undo, state.sequence)


def output_offsets(path: Path) -> dict[str, int]:
    """Where each output record of `path` starts, found without parsing other records."""
    found: dict[str, int] = {}
    position = 0
    try:
        with open_for_reading(path) as handle:
            for line in handle:
                if line.startswith(_OUTPUT_LINE) and line.endswith(b"\n"):
                    try:
                        ref = json.loads(line.decode("utf-8")).get("ref")
                    except (ValueError, AttributeError):
                        ref = None
                    if isinstance(ref, str):
                        found[ref] = position
                position += len(line)
    except OSError:
        return {}
    return found
