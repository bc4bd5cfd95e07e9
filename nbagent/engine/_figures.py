"""How a figure is written for the user, in one place: money (`money`), a percentage
(`percent`), a count of tokens (`tokens`; `count` for the number alone, where the words
around it say what is counted) and a tool call on one line (`tool_call`). Every room
writes its figures with these — the engine's status lines, the agent's notices, the
notebook's meter and chat lines, which reach them through the public `nbagent.text` — so
the meter, the context table and a chat cell never round one figure two ways.
"""

from __future__ import annotations

import json

TOOL_CALL_CHARS = 60  # a tool call's arguments on one line, at most (then "…")


def money(usd: float) -> str:
    """`$0.0123`: dollars to four places — a turn of a cheap model costs a fraction of a
    cent, which two places would show as $0.00."""
    return f"${usd:.4f}"


def percent(value: float) -> str:
    """`86%`: a percentage (of 100, not a fraction: `percent(100 * share)`) as a whole
    number, rounded half up as a reader rounds (Python's own rounding sends 12.5 to 12)."""
    return f"{int(max(0.0, value) + 0.5)}%"


def count(number: int) -> str:
    """`12,345`: a count with thousands separators (of tokens, where the words around it
    say so: "auto-compact at 7,148", "1,972 → 1,463 tokens")."""
    return f"{number:,}"


def tokens(number: int) -> str:
    """`12,345 tokens`."""
    return f"{count(number)} tokens"


def tool_call(name: str, arguments: str, limit: int = TOOL_CALL_CHARS) -> str:
    """`read_file(path='app.log', offset=0)`: a call as the user reads it on one line — its
    JSON arguments as keyword=value (values as Python writes them), anything else as sent —
    the arguments cut to `limit` characters with "…"."""
    try:
        parsed = json.loads(arguments.strip() or "{}")
    except json.JSONDecodeError:
        parsed = None
    shown = (", ".join(f"{key}={value!r}" for key, value in parsed.items())
             if isinstance(parsed, dict) else arguments)
    if len(shown) > limit:
        shown = shown[: limit - 1] + "…"
    return f"{name}({shown})"
