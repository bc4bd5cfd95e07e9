"""Text from outside made inert for a reader: `terminal_text` takes out every control
sequence a terminal would act on (ANSI CSI, OSC, DCS and the other strings, two-byte
escapes, their 8-bit forms, C0 and C1 controls but tab and newline); `strip_hidden` also
takes out what a reader cannot see but a model still reads (zero-width and bidi
characters, Unicode tags, variation selectors). `visible` is the third answer, for what
the user must approve: nothing taken out, every such character written where it stands
(`⟨U+202E⟩`), so what is shown is exactly what will run. One answer for every room: the
MCP definitions, the approval question and the notebook's text/plain all use these.
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
# What `visible` writes out: the hidden characters above, every control but tab and
# newline, and the line and paragraph separators a browser or editor may draw as a break
# Python does not read. A lone carriage return is a line break to Python's tokenizer.
_MARKED_CATEGORIES = _HIDDEN_CATEGORIES | {"Cc", "Zl", "Zp"}
_LONE_CR = re.compile(r"\r(?!\n)")


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


def _marked(ch: str) -> bool:
    if ch in "\n\t":
        return False
    return unicodedata.category(ch) in _MARKED_CATEGORIES or bool(_ALSO_HIDDEN.match(ch))


def mark(ch: str) -> str:
    """How `visible` writes one character: `⟨U+202E⟩`."""
    return f"⟨U+{ord(ch):04X}⟩"


def visible(text: str) -> str:
    """`text` exactly as it will run, with nothing drawn that a reader cannot see: every
    control, invisible, bidi or separator character (but tab and newline) is written as
    `⟨U+XXXX⟩` where it stands, never acted on and never dropped; CR LF is a newline, and
    a lone carriage return — a line break to Python — is marked and breaks the line, as
    Python reads it. Text with none of them comes back unchanged."""
    if not any(map(_marked, text)):
        return text
    text = _LONE_CR.sub(mark("\r") + "\n", text.replace("\r\n", "\n"))
    return "".join(mark(ch) if _marked(ch) else ch for ch in text)


def hidden_in(text: str) -> list[str]:
    """The distinct characters `visible` marks in `text`, in order of first appearance, each
    as `U+202E RIGHT-TO-LEFT OVERRIDE` (a lone carriage return counts; CR LF does not)."""
    seen = dict.fromkeys(ch for ch in text.replace("\r\n", "\n") if _marked(ch))
    return [f"U+{ord(ch):04X} {_name(ch)}" for ch in seen]


def _name(ch: str) -> str:
    names = {"\r": "CARRIAGE RETURN", "\x1b": "ESCAPE", "\x08": "BACKSPACE",
             "\x7f": "DELETE", "\x00": "NULL", "\x0c": "FORM FEED", "\x07": "BELL"}
    if ch in names:
        return names[ch]
    kinds = {"Cc": "CONTROL", "Co": "PRIVATE USE", "Cs": "SURROGATE"}
    return unicodedata.name(ch, kinds.get(unicodedata.category(ch), "CHARACTER"))
