"""What the model is told of the cells the user ran since its last turn: `RanCell` (a
cell's number, code, what it printed, its value and its error, as the notebook room
recorded them) and `cells_note`, the bounded note that goes before the user's next
message, so "I ran it, what now?" needs no copy-paste. Newest cells win the room; each
part is cut head and tail. Code and outputs sit in fences (`{name}` inside stays as is).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..archive._redact import redact

NOTE_HEADER = "[nbagent notebook note: the cells the user ran since your last turn]"
NOTE_END = "[end of the note; the user's message follows]"
CODE_CHARS = 1_500  # one cell's code
OUTPUT_CHARS = 1_500  # one cell's printed text, value or error
NOTE_CHARS = 8_000  # the whole note


@dataclass(frozen=True)
class RanCell:
    """One cell the user ran: its execution count, code, printed text, value (the text
    of `Out[n]`) and error (a traceback), each as recorded (may be long: the note cuts)."""

    number: int | None
    code: str
    printed: str = ""
    value: str = ""
    error: str = ""


def _cut(text: str, limit: int) -> str:
    text = text.strip("\n")
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[… {len(text) - limit:,} characters cut …]\n{text[-half:]}"


def _fenced(text: str) -> str:
    fence = "`" * max(3, 1 + max((len(m) for m in re.findall(r"`+", text)), default=0))
    return f"{fence}\n{text}\n{fence}"


def _cell_text(cell: RanCell) -> str:
    name = f"In [{cell.number}]" if cell.number is not None else "A cell"
    parts = [f"{name}:\n{_fenced(_cut(cell.code, CODE_CHARS))}"]
    for what, text in (("printed", cell.printed), ("value", cell.value),
                       ("error", cell.error)):
        if text.strip():
            parts.append(f"{what}:\n{_fenced(_cut(text, OUTPUT_CHARS))}")
    if len(parts) == 1:
        parts.append("(no output)")
    return "\n".join(parts)


def cells_note(cells: Sequence[RanCell], limit: int = NOTE_CHARS) -> str | None:
    """The note for `cells` (oldest first), within `limit` characters: the newest cells
    first in line for the room, older ones counted when left out. None when no cell."""
    kept: list[str] = []
    used = len(NOTE_HEADER) + len(NOTE_END) + 80
    for cell in reversed(cells):
        text = _cell_text(cell)
        if used + len(text) > limit and kept:
            break
        kept.append(text)
        used += len(text) + 2
    if not kept:
        return None
    left_out = len(cells) - len(kept)
    earlier = [f"({left_out} earlier cell(s) not shown)"] if left_out else []
    # it goes to the provider: secrets a cell printed are redacted, as in the listing
    return redact("\n\n".join([NOTE_HEADER, *earlier, *reversed(kept), NOTE_END]))
