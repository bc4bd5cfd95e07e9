"""The notebook listing: `notebook_state` lists the user's variables as a short bounded
block (tables first, then by name; fewer columns, then fewer lines, until it fits) and
`variable_lines` gives its lines. What one value's line says is `_values`'; cell
references in a message are `_references`'. No IPython here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...engine._tokens import estimate_tokens
from ._values import COLUMN_LIMITS, RANK, Entry, entry_of

STATE_TITLE = "Notebook state (variables in the live kernel):"
DEFAULT_MAX_TOKENS = 600

# IPython puts these in every user namespace; they are not the user's variables.
_SHELL_NAMES = frozenset({"In", "Out", "exit", "quit", "get_ipython"})

def _entries(namespace: Mapping[str, Any]) -> list[Entry]:
    found: list[Entry] = []
    for name, value in list(namespace.items()):
        if not isinstance(name, str) or name.startswith("_") or name in _SHELL_NAMES:
            continue
        try:
            entry = entry_of(name, value)
        except Exception:  # a library type that misbehaves still gets its line
            entry = Entry(RANK["object"], name, f"{name}: {type(value).__name__}")
        if entry is not None:
            found.append(entry)
    # A stable order, never the namespace's: the listing goes into the prompt, and the
    # same variables must give the same bytes or a provider's prompt cache misses.
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
