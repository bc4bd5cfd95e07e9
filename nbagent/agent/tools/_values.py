"""What one value is, as short bounded text for the model: `entry_of` describes a variable
in one line, by its kind (`VALUE_KINDS`: what the listing shows of each) without calling
anything on objects it does not know; `describe_value` is `describe_variable`'s
longer look. The listing of a whole namespace is `_namespace`'s.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from dataclasses import dataclass
from itertools import islice
from typing import Any

from ..archive._redact import redact
from ._secret_names import is_secret_name

COLUMN_LIMITS = (30, 12, 4, 0)  # columns shown per table, tried in turn until the block fits
NAME_CHARS = 40  # a column or dict-key name is cut past this
VALUE_CHARS = 60  # a scalar's or string's repr is cut past this
CUT = "… [cut]"

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
class ValueKind:
    """One kind of value `entry_of` tells apart: what a listing `shows` of it (the docs'
    words), `brief`, the same said short for the model in `list_variables`' description
    (sent with every request, so it stays a few words), and `value_shown`: whether its line
    may carry the value itself (`name: int = 3`), which docs/security.md tells the user
    from this row alone (a sample of each kind checks it, tests/agent/tools/test_values.py)."""

    name: str
    brief: str
    shows: str
    value_shown: bool


# The kinds, in the listing's order (an entry's rank is its kind's place here): the one
# place that says what the model sees of a variable. `list_variables`' description (so
# docs/tools.md) is printed from `brief`, docs/security.md's table from `shows`.
VALUE_KINDS: tuple[ValueKind, ...] = (
    ValueKind("table", "DataFrames with shape, columns and dtypes",
              "DataFrames (pandas, polars) with shape, columns and dtypes", False),
    ValueKind("series", "Series with shape and dtype", "Series with shape, dtype and name",
              False),
    ValueKind("array", "arrays with shape and dtype",
              "arrays (NumPy, PyTorch, JAX, ...) with package, shape and dtype", False),
    ValueKind("model", "models with class",
              "models (scikit-learn, PyTorch, Keras, XGBoost, ...) with class", False),
    ValueKind("value", "numbers and strings with their value, containers with their size",
              "numbers and short strings with their value, longer strings with "
              "their start, bytes and containers (list, tuple, set, dict) with their size "
              "(a dict's first keys too); secrets in text redacted, a variable whose name "
              "says it holds a secret by type only", True),
    ValueKind("object", "other values with type", "other objects with type", False),
)
RANK = {kind.name: rank for rank, kind in enumerate(VALUE_KINDS)}


def listing_description() -> str:
    """What `list_variables` tells the model it returns, from `VALUE_KINDS`."""
    return f"List the user's variables: {'; '.join(kind.brief for kind in VALUE_KINDS)}."


@dataclass(frozen=True)
class Entry:
    """One variable, described: `head` always; `columns` for tables (already cut)."""

    rank: int  # its kind's place in VALUE_KINDS: tables first, ..., other objects last
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
    if is_hidden(name, value):
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


def is_hidden(name: str, value: object) -> bool:
    """The listing's rule: a value whose variable's name says it is a secret is not shown
    (a number, a string, bytes: what can be a password, a PIN or a token)."""
    return is_secret_name(name) and isinstance(value, _HIDEABLE)


def secret_texts(namespace: dict[str, Any]) -> list[tuple[str, str]]:
    """(name, text) for each value `is_hidden` in `namespace`, as it would appear in printed
    text or a repr (a string as it is, bytes decoded, a number's digits); longest first, so
    a secret that holds another is hidden whole. Empty values are left out."""
    found: list[tuple[str, str]] = []
    for name, value in list(namespace.items()):
        if name.startswith("_") or isinstance(value, bool) or not is_hidden(name, value):
            continue  # (True and False are words, not secrets to look for)
        if isinstance(value, (bytes, bytearray)):
            text = bytes(value).decode("utf-8", "replace")
        else:
            text = str(value)
        if text.strip():
            found.append((name, text))
    return sorted(found, key=lambda pair: -len(pair[1]))


def entry_of(name: str, value: object) -> Entry | None:
    """Describe one variable, or None when it is not a user variable (module, function,
    class). Only exact built-ins and known libraries' types are looked into."""
    kind = type(value)
    classes = _classes(value)
    package = _package(value)
    typename = kind.__name__
    if classes & _FRAMES:
        columns, count = _table_columns(value, COLUMN_LIMITS[0])
        return Entry(RANK["table"], name, f"{name}: {typename}{_shape(value)}", columns, count)
    if classes & _SERIES:
        label = _read(value, "name")
        named = f" name {_cut(repr(label), NAME_CHARS)}" if label is not None else ""
        return Entry(RANK["series"], name,
                     f"{name}: {typename}{_shape(value)}{_dtype(value)}{named}")
    if classes & _MODEL_BASES or package in _MODEL_PACKAGES:
        return Entry(RANK["model"], name, f"{name}: {typename} model ({package})")
    if issubclass(kind, types.ModuleType) or callable(value):
        return None
    if package in _ARRAY_PACKAGES:
        return Entry(RANK["array"], name,
                     f"{name}: {typename} ({package}){_shape(value)}{_dtype(value)}")
    if kind in _SCALARS or kind is str or kind in (bytes, bytearray) or kind in _CONTAINERS:
        return Entry(RANK["value"], name, _value_head(name, value))
    origin = "" if package in ("builtins", "__main__") else f" ({package})"
    return Entry(RANK["object"], name, f"{name}: {typename}{origin}")



def describe_value(name: str, value: Any, *, rows: int = 5, max_chars: int = 4_000) -> str:
    """What `describe_variable` shows: for a pandas table its shape, dtypes, head and
    summary statistics; for anything else its line and its (bounded) repr."""
    try:
        entry = entry_of(name, value)
    except Exception:
        entry = None
    if entry is not None and entry.rank == RANK["table"] and _package(value) == "pandas":
        parts = [entry.head, *_attempt("dtypes:", lambda: value.dtypes)]
        parts += _attempt(f"head({rows}):", lambda: value.head(rows))
        parts += _attempt("describe():", lambda: value.describe())
    else:
        parts = [entry.line(COLUMN_LIMITS[0]) if entry else f"{name}: {type(value).__name__}"]
        if not is_hidden(name, value):
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

