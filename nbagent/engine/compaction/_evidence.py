"""Which names are real: a name the floor keeps must occur in what the user, the code or
the tools wrote. A model's prose and a summarizer's notes name columns and variables that
were never made (or turn a focus instruction into one); here are the evidence and the
line a memory block uses to say which names only its notes show.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ._identifiers import NAME_CHARS, window

NOTES_ONLY_HEADING = "Names only the notes show:"  # not kept by code: not read back

_FENCED = re.compile(r"^[ \t]*```[^\n]*\n(.*?)^[ \t]*```", re.MULTILINE | re.DOTALL)
_WORDS = re.compile(rf"[{NAME_CHARS}./~%-]+")


def fenced(text: str) -> tuple[str, str]:
    """A model's message split into its fenced code blocks (code it wrote, a proposed
    cell) and the prose around them."""
    code = [m.group(1) for m in _FENCED.finditer(text)]
    return "\n".join(code), _FENCED.sub("\n", text) if code else text


def words(text: str, *, whole: bool = False) -> set[str]:
    """The words of a text (of its scan window, unless `whole`), with and without trailing
    punctuation: a name only a model's prose shows is real when it is among them."""
    found = set(_WORDS.findall(text if whole else window(text)))
    return found | {w.rstrip(".-/%") for w in found}


def notes_only_line(shown: Iterable[str], real: set[str]) -> str:
    """The line naming what the notes show that is not real (empty when nothing is)."""
    only = [name for name in shown if name not in real]
    return f"{NOTES_ONLY_HEADING} {', '.join(only)}" if only else ""


def read_notes_only(text: str) -> set[str]:
    """The names a block's `notes_only_line` lists."""
    names: set[str] = set()
    for line in text.split("\n"):
        if line.startswith(NOTES_ONLY_HEADING):
            names.update(n for n in line[len(NOTES_ONLY_HEADING):].strip().split(", ") if n)
    return names
