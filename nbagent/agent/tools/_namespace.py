"""What the notebook holds, as short bounded text for the model. `notebook_state` lists
the user's variables (DataFrames with shape, columns and dtypes; arrays with shape and
dtype; models with class; other values with type) without calling anything on objects
it does not know; `expand_cell_references` resolves `{name}`, `In[n]`, `Out[n]` and
`Err[n]` in a chat message. No IPython here: the magics pass `In`, `Out` and errors in.
"""

from __future__ import annotations

import re
import types
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Any

from ...engine._tokens import estimate_tokens
from ..archive._redact import redact
from ._secret_names import is_secret_name

STATE_TITLE = "Notebook state (variables in the live kernel):"
DEFAULT_MAX_TOKENS = 600
COLUMN_LIMITS = (30, 12, 4, 0)  # columns shown per table, tried in turn until the block fits
NAME_CHARS = 40  # a column or dict-key name is cut past this
VALUE_CHARS = 60  # a scalar's or string's repr is cut past this
REFERENCE_CHARS = 4_000  # one interpolated value, cell input, output or error
CUT = "… [cut]"

# IPython puts these in every user namespace; they are not the user's variables.
_SHELL_NAMES = frozenset({"In", "Out", "exit", "quit", "get_ipython"})
# Known classes by (top-level package, class name), matched anywhere in a value's MRO: the
# defining module moves between releases (pandas 3 says "pandas.DataFrame").
_FRAMES = frozenset({("pandas", "DataFrame"), ("polars", "DataFrame")})
_SERIES = frozenset({("pandas", "Series"), ("polars", "Series")})
_MODEL_BASES = frozenset({
    ("sklearn", "BaseEstimator"),
    ("torch", "Module"),
    ("keras", "Model"),
    ("tensorflow", "Model"),
    ("statsmodels", "ResultsWrapper"),
})
_MODEL_PACKAGES = frozenset({"xgboost", "lightgbm", "catboost"})
# Packages whose arrays answer `.shape` and `.dtype` from metadata, without computing.
_ARRAY_PACKAGES = frozenset({"numpy", "torch", "jax", "jaxlib", "tensorflow", "cupy", "dask",
                             "xarray", "scipy", "pandas", "polars", "pyarrow"})
_SCALARS = (bool, int, float, complex, type(None))
_HIDEABLE = (str, bytes, bytearray, int, float, complex)  # values a secret name hides
_REDACT_CHARS = 8_192  # longer than any secret shape (an RSA-4096 PEM block is ~3,300)
_CONTAINERS = (list, tuple, set, frozenset, dict)


@dataclass(frozen=True)
class _Entry:
    """One variable, described: `head` always; `columns` for tables (already cut)."""

    rank: int  # tables first, then series, arrays, models, values, other objects
    name: str
    head: str
    columns: tuple[str, ...] = ()
    column_count: int = 0

    def line(self, column_limit: int) -> str:
        if not self.column_count:
            return self.head
        if column_limit <= 0:
            return f"{self.head}; {self.column_count:,} columns"
        shown = self.columns[:column_limit]
        more = self.column_count - len(shown)
        tail = f", +{more:,} more" if more > 0 else ""
        return f"{self.head}; columns: {', '.join(shown)}{tail}"


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(0, limit - 1)] + "…"


def _classes(value: object) -> set[tuple[str, str]]:
    """(top-level package, class name) of each class in the value's MRO; reads no
    attribute of the value itself."""
    return {(str(cls.__module__).split(".")[0], cls.__qualname__) for cls in type(value).__mro__}


def _package(value: object) -> str:
    return str(type(value).__module__).split(".")[0]


def _read(value: object, attribute: str) -> Any:
    """An attribute of a value from a trusted library; None when reading it fails."""
    try:
        return getattr(value, attribute)
    except Exception:
        return None


def _shape(value: object) -> str:
    shape = _read(value, "shape")
    if isinstance(shape, tuple):
        return f" shape {shape}"
    return f" shape {_cut(str(shape), VALUE_CHARS)}" if shape is not None else ""


def _dtype(value: object) -> str:
    dtype = _read(value, "dtype")
    return f" dtype {_cut(str(dtype), NAME_CHARS)}" if dtype is not None else ""


def _table_columns(value: object, limit: int) -> tuple[tuple[str, ...], int]:
    """The first `limit` columns as "name (dtype)", and how many columns there are."""
    try:
        schema = _read(value, "schema") if _package(value) == "polars" else None
        if schema is not None:
            count = len(schema)
            pairs: list[tuple[object, object]] = list(islice(schema.items(), limit))
        else:
            columns, dtypes = _read(value, "columns"), _read(value, "dtypes")
            if columns is None:
                return (), 0
            count = len(columns)
            kinds = list(islice(dtypes, limit)) if dtypes is not None else []
            pairs = [(n, kinds[i] if i < len(kinds) else "?")
                     for i, n in enumerate(islice(columns, limit))]
    except Exception:
        return (), 0
    shown = tuple(f"{_cut(str(n), NAME_CHARS)} ({_cut(str(d), NAME_CHARS)})" for n, d in pairs)
    return shown, count


def _shown(text: str) -> str:
    """A string as it may be shown: secrets redacted first, then cut (no part of a token
    survives a cut). Only the start is redacted: nothing past it is shown."""
    return redact(text[:_REDACT_CHARS])


def _value_head(name: str, value: Any) -> str:
    """An exact built-in value: scalars and short strings with their value, containers
    with their size (len() of a built-in is O(1) and runs no user code). A value whose
    name says it is a secret is never shown."""
    kind = type(value).__name__
    if is_secret_name(name) and isinstance(value, _HIDEABLE):
        return f"{name}: {kind} (hidden: the name says it is a secret)"
    if isinstance(value, _SCALARS):
        return f"{name}: {kind} = {_cut(repr(value), VALUE_CHARS)}"
    if type(value) is str:
        shown = _shown(value)
        if len(value) <= VALUE_CHARS:
            return f"{name}: str = {shown!r}"
        return f"{name}: str ({len(value):,} chars) = {_cut(repr(shown), VALUE_CHARS)}"
    if type(value) in (bytes, bytearray):
        return f"{name}: {kind} ({len(value):,} bytes)"
    if type(value) is dict:
        keys = [k for k in list(value)[:6] if type(k) is str]
        shown_keys = f": {', '.join(_cut(k, NAME_CHARS) for k in keys[:5])}" if keys else ""
        more = ", …" if keys and len(value) > len(keys[:5]) else ""
        return f"{name}: dict ({len(value):,} keys{shown_keys}{more})"
    return f"{name}: {kind} ({len(value):,} items)"


def _describe(name: str, value: object) -> _Entry | None:
    """Describe one variable, or None when it is not a user variable (module, function,
    class). Only exact built-ins and known libraries' types are looked into."""
    kind = type(value)
    classes = _classes(value)
    package = _package(value)
    typename = kind.__name__
    if classes & _FRAMES:
        columns, count = _table_columns(value, COLUMN_LIMITS[0])
        return _Entry(0, name, f"{name}: {typename}{_shape(value)}", columns, count)
    if classes & _SERIES:
        label = _read(value, "name")
        named = f" name {_cut(repr(label), NAME_CHARS)}" if label is not None else ""
        return _Entry(1, name, f"{name}: {typename}{_shape(value)}{_dtype(value)}{named}")
    if classes & _MODEL_BASES or package in _MODEL_PACKAGES:
        return _Entry(3, name, f"{name}: {typename} model ({package})")
    if issubclass(kind, types.ModuleType) or callable(value):
        return None
    if package in _ARRAY_PACKAGES:
        return _Entry(2, name, f"{name}: {typename} ({package}){_shape(value)}{_dtype(value)}")
    if kind in _SCALARS or kind is str or kind in (bytes, bytearray) or kind in _CONTAINERS:
        return _Entry(4, name, _value_head(name, value))
    origin = "" if package in ("builtins", "__main__") else f" ({package})"
    return _Entry(5, name, f"{name}: {typename}{origin}")


def _entries(namespace: Mapping[str, Any]) -> list[_Entry]:
    found: list[_Entry] = []
    for name, value in list(namespace.items()):
        if not isinstance(name, str) or name.startswith("_") or name in _SHELL_NAMES:
            continue
        try:
            entry = _describe(name, value)
        except Exception:  # a library type that misbehaves still gets its line
            entry = _Entry(5, name, f"{name}: {type(value).__name__}")
        if entry is not None:
            found.append(entry)
    return sorted(found, key=lambda e: (e.rank, e.name))


def variable_lines(namespace: Mapping[str, Any], *, max_tokens: int | None = None,
                   column_limit: int = COLUMN_LIMITS[0]) -> list[str]:
    """One line per user variable, tables first, then by name. With `max_tokens`, fewer
    columns are shown and then the last lines dropped (with a count) until it fits."""
    entries = _entries(namespace)
    limits = [limit for limit in COLUMN_LIMITS if limit <= column_limit] or [0]
    lines = [e.line(column_limit) for e in entries]
    if max_tokens is None:
        return lines
    for limit in limits:
        lines = [e.line(limit) for e in entries]
        if estimate_tokens("\n".join(lines)) <= max_tokens:
            return lines
    kept: list[str] = []
    for index, line in enumerate(lines):
        rest = len(lines) - index - 1
        note = f"… +{rest:,} more variables (list_variables shows them all)" if rest else ""
        if estimate_tokens("\n".join([*kept, line, note])) > max_tokens:
            missing = len(lines) - len(kept)
            kept.append(f"… +{missing:,} more variables (list_variables shows them all)")
            break
        kept.append(line)
    return kept


def notebook_state(namespace: Mapping[str, Any], *, max_tokens: int = DEFAULT_MAX_TOKENS,
                   title: str | None = STATE_TITLE) -> str | None:
    """A short, bounded text block of the user's variables, or None when there are none.

    It is the notebook context (a note, or the listing on a request) and the state block.
    Deterministic for the same namespace; reads only metadata of known libraries' objects
    (a lazy frame is never computed) and nothing but the type of anything else; an
    attribute that raises costs only its own detail.
    """
    budget = max(1, max_tokens - (estimate_tokens(title) + 1 if title else 0))
    lines = variable_lines(namespace, max_tokens=budget)
    if not lines:
        return None
    return "\n".join([title, *lines] if title else lines)


def describe_value(name: str, value: Any, *, rows: int = 5, max_chars: int = 4_000) -> str:
    """What `describe_variable` shows: for a pandas table its shape, dtypes, head and
    summary statistics; for anything else its line and its (bounded) repr."""
    try:
        entry = _describe(name, value)
    except Exception:
        entry = None
    if entry is not None and entry.rank == 0 and _package(value) == "pandas":
        parts = [entry.head, *_attempt("dtypes:", lambda: value.dtypes)]
        parts += _attempt(f"head({rows}):", lambda: value.head(rows))
        parts += _attempt("describe():", lambda: value.describe())
    else:
        parts = [entry.line(COLUMN_LIMITS[0]) if entry else f"{name}: {type(value).__name__}"]
        if not (is_secret_name(name) and isinstance(value, _HIDEABLE)):
            parts += _attempt("value:", lambda: repr(value))
    text = "\n".join(parts)
    shown = _shown(text)
    if len(shown) <= max_chars and len(text) <= _REDACT_CHARS:
        return shown
    return f"{shown[:max_chars]}{CUT} ({len(text):,} chars in all)"


def _attempt(label: str, make: Callable[[], object]) -> list[str]:
    try:
        return [label, str(make())]
    except Exception as error:
        return [f"{label} unavailable ({type(error).__name__}: {_cut(str(error), VALUE_CHARS)})"]


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
    `In` and `Out` default to the namespace's own (IPython keeps them there)."""
    cells, outputs = namespace.get("In"), namespace.get("Out")
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
            found = cell(match.group("bkind"), int(match.group("bnum")))
            return match.group(0) if found is None else _cut_text(found, REFERENCE_CHARS)
        kind, number = match.group("kind"), match.group("num")
        label, what = f"{kind}[{number}]", _WHAT[kind]
        found = cell(kind, int(number))
        if found is None:
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
