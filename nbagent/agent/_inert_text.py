"""Text from outside made inert for a reader: `terminal_text` takes out every control
sequence a terminal would act on (ANSI CSI, OSC, DCS and the other strings, two-byte
escapes, their 8-bit forms, C0 and C1 controls but tab and newline); `strip_hidden` also
takes out what a reader cannot see but a model still reads (zero-width and bidi
characters, Unicode tags, variation selectors). One answer for every room: the MCP
definitions, the approval question and the notebook's text/plain all use these.
"""

from __future__ import annotations

import re
import unicodedata

# Whole sequences first, so their parameters go with them: "[2J" left behind after its
# ESC would still be an instruction's remnant.
_SEQUENCES = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?"  # CSI (7- and 8-bit): colours, cursor, erase, queries
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"  # OSC, DCS…
    r"|\x1b[ -/]*[0-~]?"  # every other escape (charset switches, keypad modes, resets)
)
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # C0 but tab and newline, DEL, C1
# Format (Cf), private-use and surrogate characters hide text from a reader while the
# model still reads it; variation selectors and Hangul fillers do the same.
_HIDDEN_CATEGORIES = {"Cf", "Co", "Cs"}
_ALSO_HIDDEN = re.compile("[\ufe00-\ufe0f\U000e0100-\U000e01ef\u115f\u1160\u3164\uffa0]")


def terminal_text(text: str) -> str:
    """`text` with no control sequence left (a carriage return ending a line is kept as
    the newline): printed in a terminal it can neither restyle it, move its cursor,
    retitle the window, plant a link nor overwrite what was printed before."""
    if text.isascii() and text.isprintable():
        return text
    text = text.replace("\r\n", "\n")
    return _CONTROLS.sub("", _SEQUENCES.sub("", text))


def strip_hidden(text: str) -> str:
    """`terminal_text(text)` without the invisible characters too (tabs and line ends
    stay)."""
    text = terminal_text(text)
    if text.isascii():
        return text
    kept = "".join(ch for ch in text if unicodedata.category(ch) not in _HIDDEN_CATEGORIES)
    return _ALSO_HIDDEN.sub("", kept)
