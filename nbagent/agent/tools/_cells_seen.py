"""What the model is told of the cells the user ran since its last turn: `RanCell` (a
cell's number, code, what it printed, its value and its error, as the notebook room
recorded them) and `cells_note`, the bounded note that goes before the user's next
message, so "I ran it, what now?" needs no copy-paste. Newest cells win the room; each
part is cut head and tail. Code and outputs sit in fences (`{name}` inside stays as is).
The listing's secret-name rule holds here too (`hide_secrets`): a value whose variable's
name says it is a secret is hidden wherever the note would carry it — the literal the code
assigns it, the cell's value, what the cell printed or raised. `noted_parts` reads back
which cell parts a note carries whole, so a reference to one is not sent twice.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..archive._redact import redact
from ._secret_names import is_secret_name
from ._values import secret_texts

NOTE_HEADER = "[nbagent notebook note: the cells the user ran since your last turn]"
NOTE_END = "[end of the note; the user's message follows]"
CODE_CHARS = 1_500  # one cell's code
OUTPUT_CHARS = 1_500  # one cell's printed text, value or error
NOTE_CHARS = 8_000  # the whole note
HIDDEN = "[hidden: {name} is a secret]"
# A literal given to a name in code: `token = "…"`, `db_pass: str = '…'`, `pin=1234`,
# `"password": "…"`, `os.environ["API_TOKEN"] = "…"`; the name is checked by the rule.
_GIVEN = re.compile(
    r"""(?P<name>[A-Za-z_]\w*)(?P<close>["']?\]?)(?P<between>\s*(?::\s*[A-Za-z_][\w\[\].,| ]*?)?"""
    r"""\s*(?:==?|:)\s*)(?P<value>[rRbBuU]{0,2}(?:"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')"""
    r"""|-?\d[\w.]*)""")
# A cell whose last line is a secret's name (`db_pass`, `cfg.token`, `creds["pin"]`): its
# value is that secret.
_LAST_NAME = re.compile(r"""(?:[\w.]+\.|[\w.]+\[["'])?(?P<name>[A-Za-z_]\w*)["']?\]?\s*;?""")


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


def _hide_values(text: str, secrets: Sequence[tuple[str, str]]) -> str:
    for name, value in secrets:
        if value not in text:
            continue
        before = r"(?<!\w)" if re.match(r"\w", value[0]) else ""
        after = r"(?!\w)" if re.match(r"\w", value[-1]) else ""
        text = re.sub(before + re.escape(value) + after, HIDDEN.format(name=name), text)
    return text


def _hide_given(code: str) -> str:
    def hide(match: re.Match[str]) -> str:
        if not is_secret_name(match.group("name")):
            return match.group(0)
        hidden = repr(HIDDEN.format(name=match.group("name")))
        return match.group(0)[:match.start("value") - match.start(0)] + hidden

    return _GIVEN.sub(hide, code)


def hide_secrets(cell: RanCell, namespace: Mapping[str, Any] | None = None) -> RanCell:
    """`cell` with every secret it carries hidden, by the listing's rule (a variable whose
    name says it is a secret): the literals its code gives such names, its value when its
    last line names one, and the values such variables hold in `namespace` wherever they
    appear (code, printed text, value, error)."""
    secrets = secret_texts(dict(namespace)) if namespace is not None else []
    lines = [line for line in cell.code.strip().splitlines() if line.strip()]
    last = _LAST_NAME.fullmatch(lines[-1].strip()) if lines else None
    value = cell.value
    if value and last is not None and is_secret_name(last.group("name")):
        value = HIDDEN.format(name=last.group("name"))
    return replace(cell, code=_hide_values(_hide_given(cell.code), secrets),
                   printed=_hide_values(cell.printed, secrets),
                   value=_hide_values(value, secrets), error=_hide_values(cell.error, secrets))


def noted_parts(text: str) -> set[tuple[str, int]]:
    """The cell parts a note at the start of `text` carries whole, as references name
    them: ("In", n) its code, ("Out", n) its value, ("Err", n) its error."""
    if not text.startswith(NOTE_HEADER):
        return set()
    parts: set[tuple[str, int]] = set()
    number: int | None = None
    what: str | None = None
    fence: str | None = None
    body: list[str] = []
    for line in text.splitlines()[1:]:
        if fence is not None:  # inside a part: it ends at its own fence
            if line == fence:
                whole = not re.search(r"\[… [\d,]+ characters cut …\]", "\n".join(body))
                if number is not None and what is not None and whole:
                    parts.add((what, number))
                fence, body = None, []
            else:
                body.append(line)
            continue
        if line == NOTE_END:
            break
        heading = re.fullmatch(r"In \[(\d+)\]:", line)
        if heading is not None:
            number, what = int(heading.group(1)), "In"
        elif line in ("printed:", "value:", "error:"):
            what = {"printed:": None, "value:": "Out", "error:": "Err"}[line]
        elif re.fullmatch(r"`{3,}", line):
            fence = line
    return parts


def cells_note(cells: Sequence[RanCell], limit: int = NOTE_CHARS, *,
               namespace: Mapping[str, Any] | None = None) -> str | None:
    """The note for `cells` (oldest first), within `limit` characters: the newest cells
    first in line for the room, older ones counted when left out; the secrets they carry
    hidden (`hide_secrets`, with the values of `namespace`). None when no cell."""
    cells = [hide_secrets(cell, namespace) for cell in cells]
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
