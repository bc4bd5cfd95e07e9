"""Column names read from printed tables — pandas frames, markdown and CSV tables,
`info()` and `dtypes` listings — by how such tables look, not by a list of names. A name
may hold single spaces ("Visitor Rating"): pandas sets columns at least two spaces apart.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

_INFO_ROW = re.compile(r"^\s*\d+\s+(\S+)\s+\d+\s+non-null\s+\S+", re.MULTILINE)
_DTYPE_WORDS = ("int", "uint", "float", "object", "bool", "datetime", "timedelta", "category",
                "string", "str", "Int", "Float", "UInt", "boolean", "complex")
_DTYPE_ROW = re.compile(
    rf"^(\S+(?: \S+)*)[ \t]{{2,}}(?:{'|'.join(_DTYPE_WORDS)})\w*(?:\[[\w, :]+\])?[ \t]*$",
    re.MULTILINE,
)
_APART = re.compile(r"[ \t]{2,}")  # between pandas' columns
_SPACED_FIELD = re.compile(r"^[A-Za-z_][\w.%/()-]*(?: [\w.%/()-]+){0,5}$")
_HEADER_START = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_|")
_HEADER_FIELD = re.compile(r"^[A-Za-z_][\w.%/()-]{0,60}$")
_CELL = re.compile(r"^[A-Za-z_][\w .%/()-]{0,40}$")
_NUMBER = re.compile(
    r"^[-+]?(?:\d[\d,]*\.?\d*|\.\d+)(?:[eE][-+]?\d+)?%?$|^(?:NaN|nan|None|True|False)$"
)


def table_columns(text: str) -> Iterator[str]:
    """Column names from printed tables: pandas frames, markdown, CSV, info(), dtypes.

    Line by line: a regex anchored at line starts would be tried at every character;
    here each runs only on the lines that can match."""
    if "non-null" in text:
        for match in _INFO_ROW.finditer(text):
            yield match.group(1)
    rows: list[str] = []  # each line not blank, without its leading spaces and tabs (one that
    dtypes: list[str] = []  # starts with another kind of space counts as blank, as [^\s] does)
    for line in text.split("\n"):
        content = line.lstrip(" \t")
        if not content or content[0].isspace():
            continue
        rows.append(content)
        if len(content) == len(line):  # a dtypes row starts at the start of its line
            words = line.rsplit(None, 1)
            if len(words) > 1 and words[1].startswith(_DTYPE_WORDS):
                dtype_row = _DTYPE_ROW.match(line)
                if dtype_row is not None:
                    dtypes.append(dtype_row.group(1))
    yield from dtypes
    for index, line in enumerate(rows):  # a line that may head a table, and the next
        if line[0] not in _HEADER_START:
            continue
        if index + 1 == len(rows):
            break
        stripped, row = line.strip(), rows[index + 1]
        if stripped.startswith("|") and set(row.strip()) <= set("|:- "):
            cells = [c.strip() for c in stripped.strip("|").split("|")]
            yield from (c for c in cells if _CELL.match(c))
        elif stripped.count(",") >= 1 and row.count(",") == stripped.count(","):
            cells = [c.strip() for c in stripped.split(",")]
            if all(_CELL.match(c) for c in cells) and any(ch.isdigit() for ch in row):
                yield from cells
        else:
            yield from _frame_header(stripped, row, rows[index + 2] if index + 2 < len(rows)
                                     else None)


def _frame_header(line: str, row: str, after: str | None) -> Iterator[str]:
    """A pandas frame's columns, if `line` heads one: its fields, as many as the next row's
    values (or one fewer: the index), a number among them. Fields two spaces apart first
    (a name may hold a space), then any space apart."""
    for split, shape in ((_APART.split, _SPACED_FIELD), (str.split, _HEADER_FIELD)):
        fields, values = split(line), split(row)
        if len(values) == 1 and len(fields) > 1 and after is not None:
            values = split(after)  # the index's name sits on its own line
        if (2 <= len(fields) <= 60 and len(values) in (len(fields), len(fields) + 1)
                and all(shape.match(f) for f in fields)
                and any(_NUMBER.match(v) for v in values)):
            yield from fields
            return
