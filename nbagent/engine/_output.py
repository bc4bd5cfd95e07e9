"""Tool output capped on arrival: the head and tail of a long result, with a marker
that says how much was cut and how to read it back. Pure text in, text out; the
full output is kept by whoever calls this (the archive, the agent's output store).
"""

from __future__ import annotations

OMITTED = "[... {omitted:,} of {total:,} characters omitted{how} ...]"
MIN_CAP_CHARS = 2_000  # even a small window sees a useful piece of each result
HOW_TO_READ = '; read them with read_output(ref="{ref}", offset={offset})'
_HEAD_SHARE = 0.6
_SNAP = 0.2  # cut at a line break if one lies within the last 20% of the head or tail


def cap_output(text: str, max_chars: int, *, ref: str | None = None) -> str:
    """Keep about `max_chars` of `text`: its head and tail, cut at line breaks when
    one is near, around a marker naming what was omitted. With `ref`, the marker
    tells the model how to fetch the omitted part. Deterministic; short text is
    returned unchanged.
    """
    if len(text) <= max_chars:
        return text
    head_end = round(max_chars * _HEAD_SHARE)
    newline = text.rfind("\n", round(head_end * (1 - _SNAP)), head_end)
    head_end = newline + 1 if newline >= 0 else head_end
    tail_start = len(text) - (max_chars - head_end)
    newline = text.find("\n", tail_start, tail_start + round((len(text) - tail_start) * _SNAP))
    tail_start = newline + 1 if newline >= 0 else tail_start
    how = HOW_TO_READ.format(ref=ref, offset=head_end) if ref else ""
    marker = OMITTED.format(omitted=tail_start - head_end, total=len(text), how=how)
    return f"{text[:head_end]}{marker}\n{text[tail_start:]}"


def output_cap(max_chars_at_200k: int, scale: float) -> int:
    """The arrival cap for a window: the setting scaled down with it, never below 2,000."""
    return max(MIN_CAP_CHARS, round(max_chars_at_200k * scale))
