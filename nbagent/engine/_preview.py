"""`Preview`: the compaction the controller would run now, computed without calling the
summarizer or changing anything — the levels, the turns folded and the tool outputs
cleared with their tokens, what the floor keeps, the tokens expected after and the cache
rewrite it costs. It runs through the controller's own runner (`run_ladder`, dry): the
model levels are stood in for by the floor (the same span folded, no call), so the
levels are those that would act and the figures the summarizer-free lower bound.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from . import _figures as figures
from ._history import History
from ._ladder import Level
from ._texts import (
    PREVIEW_KEEPS,
    PREVIEW_LEVELS,
    PREVIEW_NOTHING,
    PREVIEW_TOKENS,
    plural,
    turns_text,
)
from ._view import view_change
from .compaction import extract_floor, pins_of

Message = dict[str, Any]


@dataclass(frozen=True)
class Preview:
    """What `compact_now(focus)` would do now (see the module docstring)."""

    levels: tuple[str, ...]  # the levels that would act, as the decision would name them
    calls_model: bool  # whether the real compaction would call the summarizer
    folded_turns: tuple[int, ...]  # turns (numbered from 1) that would be folded
    cleared_outputs: int  # tool outputs that would be cleared to a placeholder
    tokens_removed: int  # tokens of the messages that would leave the view
    keeps_user_messages: int  # user messages the floor keeps of what is folded
    keeps_names: tuple[str, ...]  # paths, variable and column names it keeps
    keeps_results: tuple[str, ...]  # results reported that it keeps
    pins: tuple[str, ...]  # pinned facts (always kept verbatim)
    tokens_before: int
    tokens_after: int  # expected (before the summarizer's notes, when one is called)
    cache_rewrite: int  # tokens from the first changed message on: rewritten in the cache
    focus: str | None = None
    cleared_notes: int = 0  # superseded notebook notes that would be cleared

    @property
    def changes(self) -> bool:
        return bool(self.folded_turns or self.cleared_outputs or self.cleared_notes)

    def text(self) -> str:
        """A few lines for a person."""
        if not self.changes:
            return PREVIEW_NOTHING.format(tokens=figures.tokens(self.tokens_before))
        lines = [PREVIEW_LEVELS.format(
            levels=" → ".join(self.levels),
            model="calls the summarizer" if self.calls_model else "no model call")]
        if self.folded_turns:
            lines.append(f"folds {turns_text(self.folded_turns)}")
        if self.cleared_outputs:
            lines.append(f"clears {self.cleared_outputs} old tool output"
                         f"{plural(self.cleared_outputs)}")
        if self.cleared_notes:
            lines.append(f"clears {self.cleared_notes} superseded notebook note"
                         f"{plural(self.cleared_notes)}")
        lines[-1] += f" (~{figures.tokens(self.tokens_removed)} leave the view)"
        names = ", ".join(self.keeps_names[:8]) + (" …" if len(self.keeps_names) > 8 else "")
        users, results, pins = self.keeps_user_messages, len(self.keeps_results), len(self.pins)
        lines.append(PREVIEW_KEEPS.format(users=users, users_s=plural(users),
                                          names=names or "no names", results=results,
                                          results_s=plural(results), pins=pins))
        lines.append(PREVIEW_TOKENS.format(before=figures.count(self.tokens_before),
                                           after=figures.tokens(self.tokens_after),
                                           rewrite=figures.tokens(self.cache_rewrite)))
        return "\n".join(lines)


def preview(history: History, work: list[Message], acted: Sequence[Level], *,
            tokens_before: int, count: Callable[[History], int],
            focus: str | None = None) -> Preview:
    """The preview of `work`, what a dry run of the ladder made of `history` with the
    levels `acted`; nothing is called, nothing changes. `count` is the controller's."""
    original, counts = history.messages, history.token_counts()
    current = history.copy_with(work) if acted else history
    change = view_change(original, work, counts)
    # A level passes the messages it keeps on as the same objects, so the ones not in
    # `original` by identity are the blocks it wrote; the floor is read back from them.
    old = {id(m) for m in original}
    floor = extract_floor([m for m in work if id(m) not in old])
    return Preview(
        levels=tuple(level.name for level in acted),
        calls_model=any(level.calls_model for level in acted),
        folded_turns=change.folded_turns,
        cleared_outputs=change.cleared_outputs,
        tokens_removed=change.tokens_removed,
        keeps_user_messages=len(floor.user_messages),
        keeps_names=floor.names,
        keeps_results=floor.results,
        pins=tuple(pins_of(original)),
        tokens_before=tokens_before,
        tokens_after=count(current) if current is not history else tokens_before,
        cache_rewrite=change.rewrite_tokens,
        focus=focus,
        cleared_notes=change.cleared_notes,
    )
