"""What each level is about to do, in one status line, read cheaply from what it will
touch (no model call, no rewrite), or None when it sees nothing to do: the runner shows
the line only for a level that acts (`_runner._shown`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from . import _figures as figures
from ._level_context import LadderContext
from ._markers import IMAGES_CLEARED, is_images, is_snipped
from ._texts import (
    DROPPING,
    FLOORING,
    FOLDING,
    MAKING_ROOM,
    SNIPPING,
    SUMMARIZING,
    plural,
    turns_text,
)
from ._view import turn_numbers
from .compaction._common import Layout, pending_start
from .compaction._fold_span import fold_span

Message = dict[str, Any]


def plan_snip(messages: Sequence[Message], counts: Sequence[int], c: LadderContext
              ) -> str | None:
    # The old tool outputs `snip_old_tools` would clear (the same selection; keep them in
    # step). Its batch minimum is not checked here: the runner shows a quick level's line
    # only once it acted.
    layout = Layout.of(messages)
    keep = c.settings.keep_recent_turns
    if keep <= 0:
        keep_from = len(messages)
    elif keep <= len(layout.rounds):
        keep_from = layout.rounds[-keep]
    else:
        keep_from = layout.body
    old = [i for i in range(layout.body, keep_from) if (
        messages[i]["role"] == "tool" and isinstance(messages[i].get("content"), str)
        and len(messages[i]["content"]) > c.settings.snip_min_chars
        and not is_snipped(messages[i]["content"]))
        or (is_images(messages[i]) and messages[i]["content"] != IMAGES_CLEARED)]
    if not old:
        return None
    return SNIPPING.format(count=len(old), s=plural(len(old)),
                           tokens=figures.tokens(sum(counts[i] for i in old)))


def folded(messages: Sequence[Message], counts: Sequence[int], c: LadderContext,
            window: int | None) -> tuple[tuple[int, ...], int]:
    s, scaled = c.settings, c.limits.scaled
    start, end = fold_span(messages, counts, tail_min_tokens=scaled(s.memory_tail_min_tokens),
                           tail_max_tokens=scaled(s.memory_tail_max_tokens),
                           tail_min_messages=s.memory_tail_min_messages,
                           max_input_tokens=window)
    return turn_numbers(messages, start, end), sum(counts[start:end])


def everything(messages: Sequence[Message], counts: Sequence[int]
                ) -> tuple[tuple[int, ...], int]:
    layout = Layout.of(messages)
    end = pending_start(messages)
    return turn_numbers(messages, layout.body, end), sum(counts[layout.body:end])


def plan_memory(messages: Sequence[Message], counts: Sequence[int], c: LadderContext
                ) -> str | None:
    turns, tokens = folded(messages, counts, c, c.summarizer_window)
    if not tokens:  # an empty span (a folded span may start mid-turn: no turn number)
        return None
    return FOLDING.format(turns=turns_text(turns), tokens=figures.tokens(tokens))


def plan_summary(messages: Sequence[Message], counts: Sequence[int], c: LadderContext
                 ) -> str | None:
    turns, tokens = everything(messages, counts)
    if not tokens:
        return None
    return SUMMARIZING.format(turns=turns_text(turns), tokens=figures.tokens(tokens))


def plan_floor(messages: Sequence[Message], counts: Sequence[int], c: LadderContext
               ) -> str | None:
    turns, tokens = folded(messages, counts, c, None)
    if not turns:  # too little to fold: the floor takes the whole conversation (L3's form)
        turns, tokens = everything(messages, counts)
    if not tokens:
        return None
    return FLOORING.format(turns=turns_text(turns), tokens=figures.tokens(tokens))


def plan_overflow(messages: Sequence[Message], counts: Sequence[int], c: LadderContext) -> str:
    return DROPPING.format(tokens=figures.tokens(sum(counts)))


def plan_room(messages: Sequence[Message], counts: Sequence[int], c: LadderContext
              ) -> str | None:
    if c.room_tokens is None or sum(counts) <= c.room_tokens:
        return None
    return MAKING_ROOM.format(tokens=figures.tokens(sum(counts) - c.room_tokens))
