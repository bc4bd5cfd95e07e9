"""The slow reference replay tests compare `replay`'s fast path with: every record of an
archive read through its row of the kinds table, in order, with no shortcut."""

from __future__ import annotations

from pathlib import Path

from nbagent.agent.archive import BY_KIND, ReplayState, read_lines


def every_record(path: Path) -> ReplayState:
    """What a session replays to when every record is taken back through `BY_KIND`."""
    state = ReplayState(path.stem)
    for offset, _, record in read_lines(path):
        row = BY_KIND.get(record["kind"])
        if row is not None:
            row.replay(state, record, offset)
    return state
