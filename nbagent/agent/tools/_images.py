"""Figures a tool made, for a model that reads images. While a tool runs it attaches each
PNG to its session's event stream (`attach_png`); after the round the loop takes them
(`take_figures`) and, when the model accepts images, adds them as one user message of
image parts right after the round's tool results (`images_message`): many providers take
only text in a tool message, and a user message between a call and its result would break
the pair. The tool's text result already describes each figure; the image is the extra.
"""

from __future__ import annotations

import base64
import binascii
import threading
import weakref
from dataclasses import dataclass
from typing import Any

from ...engine._events import EventStream
from ...engine._markers import IMAGES_CLEARED, IMAGES_HEADER, is_images

MAX_IMAGES = 4  # figures sent per round; more are named, not sent
MAX_IMAGE_CHARS = 1_000_000  # one figure's base64 (~750 KB of PNG)
MAX_ROUND_CHARS = 2_000_000  # all of a round's figures together
PNG_BASE64 = "iVBORw0KGgo"  # the PNG signature, base64-encoded
Message = dict[str, Any]


@dataclass(frozen=True)
class Figure:
    """One PNG a tool made: its base64 data and the name the model reads it under
    ("agent run 3, figure 1")."""

    png: str
    name: str


_pending: weakref.WeakKeyDictionary[EventStream, list[Figure]] = weakref.WeakKeyDictionary()
_lock = threading.Lock()  # tools run in a worker thread, the loop takes in its own


def attach_png(events: EventStream, data: str, name: str) -> bool:
    """Attach a PNG (base64 text, as a display bundle holds it) to the round running on
    `events`; returns False for data that is not a PNG."""
    png = "".join(data.split())  # base64 from an encoder may carry line breaks
    try:
        base64.b64decode(png[:64], validate=True)
    except (binascii.Error, ValueError):
        return False
    if not png.startswith(PNG_BASE64):
        return False
    with _lock:
        figures = _pending.setdefault(events, [])
        figures.append(Figure(png, name))
        # a tool called outside a turn has no round to take them: keep only a round's worth
        del figures[:-MAX_IMAGES * 4]
    return True


def take_figures(events: EventStream) -> list[Figure]:
    """The figures attached on `events` since the last take (and forget them)."""
    with _lock:
        return _pending.pop(events, [])


def images_message(figures: list[Figure]) -> Message | None:
    """One user message holding `figures` as image parts (data: URLs), after a header
    text part naming each; bounded in count and size, what is left out is named in the
    text. None when there is nothing to send."""
    if not figures:
        return None
    lines, total = [IMAGES_HEADER], 0
    parts: list[dict[str, Any]] = []
    for figure in figures:
        size = len(figure.png)
        if len(parts) >= MAX_IMAGES:
            lines.append(f"{figure.name}: not sent (at most {MAX_IMAGES} figures a round)")
        elif size > MAX_IMAGE_CHARS or total + size > MAX_ROUND_CHARS:
            lines.append(f"{figure.name}: not sent (too large: {size * 3 // 4:,} bytes)")
        else:
            total += size
            lines.append(f"image {len(parts) + 1}: {figure.name}")
            parts.append({"type": "image_url",
                          "image_url": {"url": f"data:image/png;base64,{figure.png}"}})
    if not parts:
        return None
    return {"role": "user", "content": [{"type": "text", "text": "\n".join(lines)}, *parts]}


def without_images(messages: list[Message]) -> list[Message]:
    """The request for a model that reads no images (the model changed after figures were
    sent): each figures message as its cleared text. The history keeps them."""
    if not any(is_images(m) and isinstance(m.get("content"), list) for m in messages):
        return messages
    return [{**m, "content": IMAGES_CLEARED} if is_images(m) else m for m in messages]
