"""jupyter-ai's cell references in a chat message: `expand_cell_references` resolves
`{name}`, `In[n]`, `Out[n]` and `Err[n]`, each bounded. No IPython here: the magics pass
`In`, `Out` and errors in.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ._cells_seen import noted_parts
from ._values import CUT

REFERENCE_CHARS = 4_000  # one interpolated value, cell input, output or error

def _cut_text(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}{CUT} ({len(text):,} chars in all)"


_REFERENCE = re.compile(
    r"(?<!\{)\{(?P<bkind>In|Out|Err)\[(?P<bnum>\d+)\]\}(?!\})"  # {In[3]}: in place
    r"|(?<![\w{])(?P<kind>In|Out|Err)\[(?P<num>\d+)\]"  # In[3]: attached below
    r"|(?<!\{)\{(?P<name>[^\W\d]\w*)\}(?!\})"  # {name}: the variable's value
)
_CODE = re.compile(r"```.*?(?:```|\Z)|`[^`\n]*`", re.S)
_WHAT = {"In": "input", "Out": "output", "Err": "error"}


def _as_text(value: object) -> str:
    return value if isinstance(value, str) else repr(value)


def expand_cell_references(
    text: str,
    namespace: Mapping[str, Any],
    *,
    In: Sequence[str] | None = None,  # noqa: N803 - IPython's names, as the user types them
    Out: Mapping[int, Any] | None = None,  # noqa: N803
    errors: Mapping[int, str] | None = None,
) -> str:
    """Resolve jupyter-ai's conventions in a chat message.

    `{name}` becomes the variable's value (a string as is, anything else its repr;
    bounded); `{In[3]}`, `{Out[3]}`, `{Err[3]}` become that cell's input, output or
    error in place. A bare `In[3]`, `Out[3]` or `Err[3]` ("explain Err[7]") stays as
    written and the cell's text is attached below the message. Unknown names, `{{...}}`
    and anything inside backtick code are left alone; inserted text is not scanned again.
    `In` and `Out` default to the namespace's own (IPython keeps them there). A cell part
    that the notebook note opening `text` already carries whole is not sent again: the
    reference says it is in the note."""
    cells, outputs = namespace.get("In"), namespace.get("Out")
    noted = noted_parts(text)
    In, Out = (In if In is not None or not isinstance(cells, list) else cells,  # noqa: N806
               Out if Out is not None or not isinstance(outputs, dict) else outputs)

    def cell(kind: str, number: int) -> str | None:
        try:
            if kind == "In":
                return In[number] if In is not None and 0 <= number < len(In) else None
            if kind == "Out":
                return _as_text(Out[number]) if Out is not None and number in Out else None
            return errors[number] if errors is not None and number in errors else None
        except Exception:
            return None

    attached: dict[str, str] = {}

    def resolve(match: re.Match[str]) -> str:
        if match.group("name"):
            name = match.group("name")
            if name not in namespace:
                return match.group(0)
            try:
                return _cut_text(_as_text(namespace[name]), REFERENCE_CHARS)
            except Exception:
                return match.group(0)
        if match.group("bkind"):
            kind, number = match.group("bkind"), match.group("bnum")
            if (kind, int(number)) in noted:
                return f"{kind}[{number}] (in the notebook note above)"
            found = cell(kind, int(number))
            return match.group(0) if found is None else _cut_text(found, REFERENCE_CHARS)
        kind, number = match.group("kind"), match.group("num")
        label, what = f"{kind}[{number}]", _WHAT[kind]
        found = cell(kind, int(number))
        if (kind, int(number)) in noted:
            attached.setdefault(label, f"{label}: the {what} of cell {number} is in the "
                                       "notebook note above.")
        elif found is None:
            attached.setdefault(label, f"{label}: no {what} recorded for cell {number}.")
        else:
            attached.setdefault(label, f"{label} (the {what} of cell {number}):\n```\n"
                                       f"{_cut_text(found, REFERENCE_CHARS)}\n```")
        return match.group(0)

    pieces: list[str] = []
    last = 0
    for code in _CODE.finditer(text):
        pieces += [_REFERENCE.sub(resolve, text[last:code.start()]), code.group(0)]
        last = code.end()
    pieces.append(_REFERENCE.sub(resolve, text[last:]))
    expanded = "".join(pieces)
    if not attached:
        return expanded
    return "\n\n".join([expanded.rstrip(), *attached.values()])
