"""What a tool returned, as text for the model: strings as they are, tables (pandas
DataFrames and Series, numpy arrays) as bounded text tables, other values as JSON or
their repr. Tables are recognised by their class's package and name, so neither pandas
nor numpy is imported here until a tool returns one of theirs.
"""

from __future__ import annotations

import json
from typing import Any

TABLE_ROWS = 60  # rows shown of a longer table (head and tail)
TABLE_COLUMNS = 20
CELL_CHARS = 50  # one cell's text
ARRAY_ITEMS = 200  # an array longer than this is summarised (edges kept)


def _kind(value: object) -> str | None:
    """"frame", "series", "array" or "scalar" for pandas' and numpy's types, else None."""
    for cls in type(value).__mro__:
        package = str(cls.__module__).split(".")[0]
        if package == "pandas" and cls.__name__ in ("DataFrame", "Series"):
            return "frame" if cls.__name__ == "DataFrame" else "series"
        if package == "numpy" and cls.__name__ in ("ndarray", "generic"):
            return "array" if cls.__name__ == "ndarray" else "scalar"
    return None


def _table_text(value: Any, kind: str) -> str:
    """A table as text: its type and shape on one line, then the (bounded) table."""
    if kind == "scalar":  # numpy.int64(3) reads as 3, not as the JSON string "3"
        return str(value)
    if kind == "array":
        import numpy

        body = numpy.array2string(value, threshold=ARRAY_ITEMS, edgeitems=3,
                                  max_line_width=120)
        return f"ndarray shape {tuple(value.shape)} dtype {value.dtype}:\n{body}"
    rows = f"{value.shape[0]:,} rows"
    title = f"{type(value).__name__}, {rows} x {value.shape[1]:,} columns" if kind == "frame" \
        else f"{type(value).__name__}, {rows}"
    options: dict[str, Any] = {"max_rows": TABLE_ROWS, "min_rows": TABLE_ROWS}
    if kind == "frame":
        options.update(max_cols=TABLE_COLUMNS, max_colwidth=CELL_CHARS)
    else:
        options.update(name=True, dtype=True)
    return f"{title}:\n{value.to_string(**options)}"


def as_text(value: Any) -> str:
    """What a tool returned, as text. A table's text comes from its library; a value
    whose conversion raises lets the error through (`run_tool` reports it)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):  # undecodable bytes stay visible as \x escapes
        return value.decode("utf-8", errors="backslashreplace")
    if value is None:
        return "(no output)"
    kind = _kind(value)
    if kind is not None:
        return _table_text(value, kind)
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError, RecursionError):
        pass
    return repr(value)
