"""Error lines pulled out of text by code, for the floor: a traceback's last line, a line
that starts like an error ("ERROR: ...", "Failed ..."), and, in prose, lines that name an
exception.
"""

from __future__ import annotations

import re

from ._identifiers import window

ERROR_LINE_CHARS = 160
_ERROR_CLASSES = ("Error", "Exception", "Warning", "Exit", "Interrupt")  # a class name's end
_ERROR_STARTS = ("ERROR", "Error", "error", "FATAL", "Fatal", "fatal", "FAILED", "Failed")
_ERROR = re.compile(
    rf"^[ \t]*(?:[\w.]+\.)?[A-Z]\w*(?:{'|'.join(_ERROR_CLASSES)})\b(?::.*)?$"
    rf"|^[ \t]*(?:{'|'.join(_ERROR_STARTS)})\b[:\s].*$",
    re.MULTILINE,
)
_ERROR_WORDS = (*_ERROR_CLASSES, *_ERROR_STARTS)  # one is in every _ERROR line
_MENTIONS_ERROR = re.compile(r"\b[A-Z]\w*(?:Error|Exception)\b")


def error_lines(text: str, *, mentions: bool = False) -> list[str]:
    """Error lines of a tool output; with `mentions`, also prose lines naming an exception."""
    text = window(text)
    if not any(word in text for word in _ERROR_WORDS):  # a substring test is far faster
        return []  # than the anchored pattern (mentions need "Error" or "Exception" too)
    found = [m.group().strip()[:ERROR_LINE_CHARS] for m in _ERROR.finditer(text)]
    if mentions:
        found += [line.strip()[:ERROR_LINE_CHARS] for line in text.splitlines()
                  if _MENTIONS_ERROR.search(line)]
    return found
