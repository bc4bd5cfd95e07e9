"""The deterministic floor: what can be pulled out of a transcript by code, with
no model — the user's own words, file paths, variable and DataFrame names, URLs,
error lines — so verbatim identifiers survive even a weak summarizer.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .._markers import is_plain_user
from ._render import _text, shorten

USER_MESSAGE_CHARS = 500
USER_MESSAGES_TOTAL = 4_000
MAX_NAMES = 40
MAX_ERROR_LINES = 20

_PATH = re.compile(
    r"(?<![\w/.-])(?:~?/)?(?:[\w.-]+/)*[\w-]+\.(?:csv|tsv|parquet|feather|xlsx?|json|jsonl|py|ipynb|"
    r"txt|md|sql|ya?ml|pkl|pickle|h5|hdf5|npz|npy|zip|gz|png|jpe?g|svg|html)\b"
)
_URL = re.compile(r"https?://[^\s\"'<>)\]]+")
_ASSIGNED = re.compile(r"^\s*([A-Za-z_]\w*)\s*=\s*(?:pd|np|pl|spark)\.", re.MULTILINE)
_FRAME_NAME = re.compile(r"\b(?:df|[A-Za-z_]\w*_df|df_\w+|[A-Za-z_]\w*_(?:frame|data))\b")
_ERROR_LINE = re.compile(r"\b(?:\w*Error|\w*Exception|Traceback|failed|FAILED)\b")
_IDENTIFIER = re.compile(r"^[A-Za-z_]\w{0,60}$")


@dataclass(frozen=True)
class Floor:
    user_messages: tuple[str, ...]
    names: tuple[str, ...]  # paths, URLs, variable and DataFrame names
    error_lines: tuple[str, ...]


def _unique(items: list[str], limit: int) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for item in items:
        seen.setdefault(item, None)
    return tuple(seen)[:limit]


def _argument_names(message: Mapping[str, Any]) -> list[str]:
    names = []
    for call in message.get("tool_calls") or ():
        try:
            arguments = json.loads(call.get("function", {}).get("arguments") or "{}")
        except json.JSONDecodeError:
            continue
        if isinstance(arguments, dict):
            names += [v for v in arguments.values() if isinstance(v, str) and _IDENTIFIER.match(v)]
    return names


def _user_messages(messages: Sequence[Mapping[str, Any]]) -> tuple[str, ...]:
    """Every user message, capped; the first and the latest always make it in."""
    texts = [
        shorten(_text(m.get("content")), USER_MESSAGE_CHARS) for m in messages if is_plain_user(m)
    ]
    if len(texts) <= 2:
        return tuple(texts)
    kept, budget = [texts[0], texts[-1]], USER_MESSAGES_TOTAL - len(texts[0]) - len(texts[-1])
    middle: list[str] = []
    for text in reversed(texts[1:-1]):  # the most recent ones first
        if len(text) > budget:
            break
        middle.insert(0, text)
        budget -= len(text)
    return (kept[0], *middle, kept[1])


def extract_floor(messages: Sequence[Mapping[str, Any]]) -> Floor:
    names: list[str] = []
    errors: list[str] = []
    for message in messages:
        text = _text(message.get("content"))
        names += _PATH.findall(text) + _URL.findall(text) + _ASSIGNED.findall(text)
        names += _FRAME_NAME.findall(text) if message["role"] != "tool" else []
        names += _argument_names(message)
        for call in message.get("tool_calls") or ():
            arguments = str(call.get("function", {}).get("arguments", ""))
            names += _PATH.findall(arguments) + _ASSIGNED.findall(arguments.replace("\\n", "\n"))
        if message["role"] in ("tool", "assistant"):
            errors += [line.strip()[:200] for line in text.splitlines() if _ERROR_LINE.search(line)]
    return Floor(
        _user_messages(messages), _unique(names, MAX_NAMES), _unique(errors, MAX_ERROR_LINES)
    )
