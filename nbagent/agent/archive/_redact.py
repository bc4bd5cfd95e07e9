"""Redaction at rest: find secrets by their real shapes and replace only the secret span.

One table (`_shapes.SHAPES`) holds every recognised format; each row says which span it
removes. Environment values are secrets only when they look like one (`looks_secret`)
and only as whole tokens; keys, roles and ids are structure and never change.
`redact` keeps structure: a JSON text stays valid JSON (secrets are removed inside its
parsed values; it is re-serialised only when the span edit would not parse back the
same). The live history never passes through here: only what goes to disk, or into an
error message, does.
"""

from __future__ import annotations

import functools
import itertools
import json
import math
import os
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from ._shapes import API_NAME, PASSWORD_NAME, PLACEHOLDER, REDACTED, SHAPES, SecretShape

__all__ = ["REDACTED", "SHAPES", "Redactor", "SecretShape", "find_secrets", "looks_secret",
           "redact", "redact_value", "secret_env_values"]


_DATA_URI = re.compile(r"data:[\w/+.-]+;base64,[A-Za-z0-9+/=]+")
_SECRET_ENV_NAME = re.compile(r"(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?)$")
_STRUCTURE = {"role", "id", "tool_call_id", "type", "ref", "kind"}
_NOT_SECRET_VALUES = {"true", "false", "none", "null", "yes", "no", "on", "off", "empty"}


def _kind(char: str) -> int:
    return 0 if char.isdigit() else 1 if char.isupper() else 2


def _entropy(text: str) -> float:
    """Shannon entropy in bits per character."""
    counts = Counter(text)
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values())


def looks_secret(value: str) -> bool:
    """A value that is a secret by its shape, whatever names it: long, no spaces, high
    entropy and letters and digits that keep switching (random), unlike words,
    identifiers, paths, numbers, dates and placeholders ("postgres", "customer_id",
    "assistant", "reports-2024-final", "Summer2024")."""
    if (len(value) < 10 or any(c.isspace() for c in value) or value[0] in "/~."
            or value.isdigit() or PLACEHOLDER.fullmatch(value)):
        return False
    runs = re.findall(r"[A-Za-z0-9]+", value)
    letters = sum(len(run) for run in runs)
    switches = sum(_kind(a) != _kind(b) for run in runs for a, b in itertools.pairwise(run))
    return letters >= 8 and switches >= max(3, letters // 4) and _entropy(value) >= 3.0


def secret_env_values(environ: Mapping[str, str] | None = None) -> list[str]:
    """Values of environment variables whose names say they are secret (…_KEY, …TOKEN,
    …SECRET, …PASSWORD) and whose values look like one (`looks_secret`); longest first."""
    environ = os.environ if environ is None else environ
    found = set()
    # each record takes a snapshot: the names are read in one pass and each name's verdict
    # is kept (values are not: a secret is not held longer than the environment holds it)
    for name in [name for name in environ if _secret_name(name)]:
        value = environ.get(name, "").strip()
        if value.lower() not in _NOT_SECRET_VALUES and looks_secret(value):
            found.add(value)
    return sorted(found, key=len, reverse=True)


@functools.lru_cache(maxsize=1024)
def _secret_name(name: str) -> bool:
    return any(_SECRET_ENV_NAME.search(part) for part in re.split(r"[^A-Za-z0-9]+", name.upper()))


def _whole_token(text: str, start: int, end: int) -> bool:
    """The span is not part of a longer word: no letter or digit runs on across it."""
    before = text[start - 1] if start > 0 else ""
    after = text[end] if end < len(text) else ""
    return not ((before.isalnum() and text[start].isalnum())
                or (after.isalnum() and text[end - 1].isalnum()))


def find_secrets(text: str, env_values: Iterable[str] = ()) -> list[tuple[int, int, str]]:
    """The secret spans in `text` as (start, end, format name), merged and in order."""
    spans: list[tuple[int, int, str]] = []
    lowered = text.lower() if text.isascii() else None  # (an ASCII text's case is only ASCII's)
    for shape in SHAPES:
        if shape.needs and not any(part in text for part in shape.needs):
            continue
        if shape.needs_folded and lowered is not None and not any(
                word in lowered for word in shape.needs_folded):
            continue
        for match in shape.pattern.finditer(text):
            span = shape.span(match)
            if span is not None:
                spans.append((span[0], span[1], shape.name))
    for value in env_values:
        start = text.find(value)
        while start >= 0:
            if _whole_token(text, start, start + len(value)):
                spans.append((start, start + len(value), "secret environment variable"))
            start = text.find(value, start + 1)
    if not spans:
        return []
    if "base64," in text:  # an image's data is not a key, whatever it happens to spell
        kept = [m.span() for m in _DATA_URI.finditer(text)]
        spans = [s for s in spans if not any(a <= s[0] and s[1] <= b for a, b in kept)]
    merged: list[tuple[int, int, str]] = []
    for start, end, name in sorted(spans):
        if merged and start <= merged[-1][1]:
            last = merged[-1]
            merged[-1] = (last[0], max(last[1], end), last[2])
        else:
            merged.append((start, end, name))
    return merged


class Redactor:
    """Redacts strings and JSON-like values with one snapshot of the secret environment
    variables (take one per record: reading the environment for each string is waste)."""

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        self.env_values = secret_env_values(environ)

    def spans(self, text: str, *, env: bool = True) -> str:
        """Replace each secret span of `text`, whatever the text's structure (`env`:
        also the secret environment variables' values)."""
        found = find_secrets(text, self.env_values if env else ())
        if not found:
            return text
        parts: list[str] = []
        position = 0
        for start, end, _ in found:
            parts += [text[position:start], REDACTED]
            position = end
        parts.append(text[position:])
        return "".join(parts)

    def text(self, text: str) -> str:
        """Redact a string; a JSON object or array stays valid JSON of the same shape."""
        raw = self.spans(text)
        if text.lstrip()[:1] not in ("{", "["):
            return raw
        try:
            parsed = json.loads(text)
            if not isinstance(parsed, (dict, list)):
                return raw
            cleaned = self.value(parsed)
        except (ValueError, RecursionError):
            return raw
        if cleaned == parsed:
            return raw if raw == text or _parses(raw) else text
        if raw != text and _parses(raw, cleaned):
            return raw  # the span edit kept the JSON: keep its formatting too
        return json.dumps(cleaned, ensure_ascii=False)

    def value(self, value: Any) -> Any:
        """Redact every string inside a JSON-like value (a new value; the input is kept)."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):  # keys are structure: never altered
            return {k: self._field(k, v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.value(v) for v in value]
        return value

    def _field(self, key: Any, value: Any) -> Any:
        """A field's value: redacted as any value, and whole when its name says it is a
        secret ({"api_key": "demo-key-12345678"})."""
        if not isinstance(value, str) or not isinstance(key, str):
            return self.value(value)
        if key in _STRUCTURE:  # a role, an id: only a secret by its own shape
            return self.spans(value, env=False)
        cleaned = self.text(value)
        if cleaned != value or not value or PLACEHOLDER.fullmatch(value):
            return cleaned
        if ((PASSWORD_NAME.fullmatch(key) or API_NAME.fullmatch(key))
                and value.lower() not in _NOT_SECRET_VALUES):
            return REDACTED
        return value


def _parses(text: str, expected: Any = None) -> bool:
    try:
        parsed = json.loads(text)
    except (ValueError, RecursionError):
        return False
    return expected is None or bool(parsed == expected)


def redact(text: str, environ: Mapping[str, str] | None = None) -> str:
    """`text` with every recognised secret span replaced by "[redacted]"."""
    return Redactor(environ).text(text)


def redact_value(value: Any, environ: Mapping[str, str] | None = None) -> Any:
    """A copy of a JSON-like value (a record, a message) with its secrets redacted."""
    return Redactor(environ).value(value)
