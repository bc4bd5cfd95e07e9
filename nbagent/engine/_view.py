"""What a compaction took out of the model's view: the turns folded, the tool outputs
cleared, their tokens, and where the rewritten prompt starts (its cache cost). Read from
the history before and after, by identity: a level keeps an unchanged message as the
same dict, so whatever is not there any more left the view.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ._markers import is_cleared, is_note, is_plain_user
from ._texts import left_view_text
from ._tokens import estimate_message_tokens
from .compaction._common import Layout

Message = Mapping[str, Any]


@dataclass(frozen=True)
class ViewChange:
    """The difference between a history and its compacted form."""

    folded_turns: tuple[int, ...]  # turns (numbered from 1) whose request left the view
    cleared_outputs: int  # tool results replaced by a placeholder
    dropped_outputs: int  # tool results folded with their turn
    tokens_removed: int  # tokens of the messages not kept as they were
    first_changed: int  # the index, in the new history, of its first new message
    tokens_after: int
    rewrite_tokens: int  # tokens from the first new message on: the cache rewrite
    cleared_notes: int = 0  # superseded notebook notes cleared

    def text(self) -> str | None:
        """One line of what left the view and how to get it back (None: nothing did)."""
        return left_view_text(self.folded_turns, self.cleared_outputs, self.tokens_removed)


def view_change(before: Sequence[Message], after: Sequence[Message],
                counts: Sequence[int] | None = None) -> ViewChange:
    """Compare `before` with its compacted form `after` (`counts`: one per `before`)."""
    counts = list(counts) if counts is not None else [estimate_message_tokens(m) for m in before]
    kept = {id(m) for m in after}
    new_ids = {m.get("tool_call_id") for m in after if m.get("role") == "tool"}
    rounds = Layout.of(before).rounds
    folded = tuple(n for n, i in enumerate(rounds, 1) if id(before[i]) not in kept)
    cleared = dropped = removed = 0
    for message, tokens in zip(before, counts, strict=True):
        if id(message) in kept:
            continue
        removed += tokens
        if message.get("role") == "tool":
            if message.get("tool_call_id") in new_ids:
                cleared += 1
            else:
                dropped += 1
    first = next((i for i, (a, b) in enumerate(zip(before, after, strict=False)) if a is not b),
                 min(len(before), len(after)))
    old = {id(m): n for m, n in zip(before, counts, strict=True)}
    sizes = [old.get(id(m)) or estimate_message_tokens(m) for m in after]
    was = {id(m) for m in before}
    notes = sum(1 for m in after if is_note(m) and is_cleared(m) and id(m) not in was)
    return ViewChange(folded, cleared, dropped, removed, first, sum(sizes), sum(sizes[first:]),
                      notes)


def turn_numbers(messages: Sequence[Message], start: int, stop: int) -> tuple[int, ...]:
    """The turns (numbered from 1 among the history's rounds) beginning in [start, stop)."""
    rounds = Layout.of(messages).rounds
    return tuple(n for n, i in enumerate(rounds, 1) if start <= i < stop
                 and is_plain_user(messages[i]))
