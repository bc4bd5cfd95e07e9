"""Redaction at rest: find secrets by their real shapes and replace only the secret span.

One table (`SHAPES`) holds every recognised format; each row says which span it removes.
`redact` keeps structure: a JSON text stays valid JSON (secrets are removed inside its
parsed values; it is re-serialised only when the span edit would not parse back the
same). The live history never passes through here: only what goes to disk, or into an
error message, does.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

REDACTED = "[redacted]"
Span = tuple[int, int]


def _has_digit(text: str) -> bool:
    return any(c.isdigit() for c in text)


def _random_looking(text: str) -> bool:
    """Keys are random: long, letters and digits mixed, a long unbroken alphanumeric run;
    slugs and hyphenated words ("sk-learn-pipeline-2024") are not."""
    runs = re.findall(r"[A-Za-z0-9]+", text)
    return (len(text) >= 16 and _has_digit(text) and any(c.isalpha() for c in text)
            and max((len(run) for run in runs), default=0) >= 10)


def _mixed_case(text: str) -> bool:
    return any(c.isupper() for c in text) and any(c.islower() for c in text)


@dataclass(frozen=True)
class SecretShape:
    """One secret format. `pattern` finds candidates (it opens with a literal where it
    can: that keeps a pass over megabytes of output fast); `span` says which part of a
    match is the secret, or None when the candidate is not one after all."""

    name: str
    pattern: re.Pattern[str]
    span: Callable[[re.Match[str]], Span | None]


def _whole(check: Callable[[str], bool] | None = None) -> Callable[[re.Match[str]], Span | None]:
    """The group named "secret" if the pattern has one, else the whole match, when
    `check` accepts it."""

    def span(match: re.Match[str]) -> Span | None:
        group = "secret" if "secret" in match.re.groupindex else 0
        found = match.span(group)
        if found[0] == found[1] or (check is not None and not check(match.group(group))):
            return None
        return found

    return span


def _shape(name: str, pattern: str, span: Callable[[re.Match[str]], Span | None] | None = None,
           flags: int = 0) -> SecretShape:
    return SecretShape(name, re.compile(pattern, flags), span or _whole())


def _no_word_before(width: int) -> str:
    """A lookbehind set after a literal prefix `width` characters long: the prefix does
    not continue a word ("risk-adjusted" holds no "sk-" key, "task-scheduler" neither)."""
    return rf"(?<![A-Za-z0-9_-].{{{width}}})"


# `name = value`, `"name": "value"`, `name: value`, `Name=value;`: a quoted value (with
# escapes) or a bare one, which stops at code punctuation
_ASSIGN = r"""(?![A-Za-z0-9_])["']?[ \t]*(?::(?![=:])|=(?![=>]))[ \t]*"""
_VALUE = (r"""(?:(?P<quote>["'])(?P<quoted>(?:\\.|(?!(?P=quote))[^\\\n])*)(?P=quote)"""
          r"""|(?P<bare>[^\s"'<>;&,(){}\[\]\\`]+))""")
_NAME_HEAD = re.compile(r"[A-Za-z0-9_.-]{0,80}\Z")
_SEGMENTS = r"(?:[A-Za-z0-9]+[_.-])*"
_PASSWORD_NAME = re.compile(_SEGMENTS + r"[A-Za-z]*(?:password|passwd|pwd)", re.I)
_API_NAME = re.compile(
    _SEGMENTS + r"(?:(?:x-)?api[_-]?key|secret(?:[_-]?(?:access[_-]?)?key)?|client[_-]?secret|"
    r"private[_-]?key|auth[_-]?key|"
    r"(?:access|auth|refresh|api|bearer|session|id)[_-]?token|authorization)", re.I)
_AWS_SECRET_NAME = re.compile(_SEGMENTS + r"(?:aws[_-]?)?secret[_-]?(?:access[_-]?)?key", re.I)
_PLACEHOLDER = re.compile(r"\{[^{}]*\}|\$\{?[A-Za-z_]\w*\}?|%\([^)]*\)s|<[^<>]*>|\*+|x+|X+|"
                          r"\.+|" + re.escape(REDACTED))
_IDENTIFIER_PATH = re.compile(r"[A-Za-z_]+(?:\.[A-Za-z_]+)*")


def _name(match: re.Match[str]) -> str:
    """The whole name an assignment's keyword ends (`OPENAI_API_KEY` for its `KEY`)."""
    head = _NAME_HEAD.search(match.string, max(0, match.start() - 80), match.start())
    return (head.group() if head else "") + match.group("key")


def _assigned(names: re.Pattern[str], min_length: int) -> Callable[[re.Match[str]], Span | None]:
    """The value of `name = value` when the name is a secret's and the value is one: not a
    placeholder, nor code (`getpass()`, `os.environ[...]`, an identifier, a path)."""

    def span(match: re.Match[str]) -> Span | None:
        if not names.fullmatch(_name(match)):
            return None
        if match.group("quoted") is not None:
            value, found = match.group("quoted"), match.span("quoted")
        else:
            value, found = match.group("bare"), match.span("bare")
            after = match.string[found[1]:found[1] + 1]
            if after in ("(", "[") or value[:1] in ("/", "~", "$"):
                return None  # a call, an index, a path, a reference: not the value itself
            if after not in (";", "&") and _IDENTIFIER_PATH.fullmatch(value):
                return None  # `password=password`, `api_key=config.key`
        if len(value) < min_length or _PLACEHOLDER.fullmatch(value):
            return None
        return found

    return span


def _aws_secret(match: re.Match[str]) -> Span | None:
    return match.span("secret") if _AWS_SECRET_NAME.fullmatch(_name(match)) else None


SHAPES: tuple[SecretShape, ...] = (
    _shape("OpenAI / Anthropic / OpenRouter key", r"sk-" + _no_word_before(3)
           + r"[A-Za-z0-9_-]{20,}(?![A-Za-z0-9_-])", _whole(_random_looking)),
    _shape("AWS access key id", r"A" + _no_word_before(1) + r"(?:KIA|SIA|BIA|CCA|3T[A-Z0-9])"
           r"[A-Z0-9]{16}(?![A-Za-z0-9])"),
    _shape("AWS secret access key", r"(?P<key>(?i:key))" + _ASSIGN
           + r"""["']?(?P<secret>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])""", _aws_secret),
    _shape("GitHub token", r"g" + _no_word_before(1) + r"(?:h[pousr]_[A-Za-z0-9]{36,255}|"
           r"ithub_pat_[A-Za-z0-9_]{50,255})(?![A-Za-z0-9_])"),
    _shape("GitLab token", r"glpat-" + _no_word_before(6) + r"[A-Za-z0-9_-]{20,}"
           r"(?![A-Za-z0-9_-])"),
    _shape("Google API key", r"AIza" + _no_word_before(4) + r"[0-9A-Za-z_-]{35}"
           r"(?![A-Za-z0-9_-])"),
    _shape("Slack token", r"xox" + _no_word_before(3) + r"[abposr]-[0-9A-Za-z-]{10,}"
           r"(?![A-Za-z0-9_-])", _whole(_has_digit)),
    _shape("Hugging Face token", r"hf_" + _no_word_before(3) + r"[A-Za-z0-9]{30,}"
           r"(?![A-Za-z0-9_])", _whole(_mixed_case)),
    _shape("Stripe key", r"[sr]k_" + _no_word_before(3) + r"(?:live|test)_[0-9A-Za-z]{16,}"
           r"(?![A-Za-z0-9_])"),
    _shape("Groq key", r"gsk_" + _no_word_before(4) + r"[A-Za-z0-9]{40,}(?![A-Za-z0-9_])",
           _whole(_random_looking)),
    _shape("Replicate token", r"r8_" + _no_word_before(3) + r"[A-Za-z0-9]{30,}"
           r"(?![A-Za-z0-9_])", _whole(_random_looking)),
    _shape("Perplexity key", r"pplx-" + _no_word_before(5) + r"[A-Za-z0-9]{32,}"
           r"(?![A-Za-z0-9_-])", _whole(_random_looking)),
    _shape("xAI key", r"xai-" + _no_word_before(4) + r"[A-Za-z0-9]{32,}(?![A-Za-z0-9_-])",
           _whole(_random_looking)),
    _shape("npm token", r"npm_" + _no_word_before(4) + r"[A-Za-z0-9]{36}(?![A-Za-z0-9_])",
           _whole(_random_looking)),
    _shape("PyPI token", r"pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{20,}"),
    _shape("SendGrid key", r"SG\." + _no_word_before(3) + r"[A-Za-z0-9_-]{16,32}\."
           r"[A-Za-z0-9_-]{16,64}(?![A-Za-z0-9_-])"),
    _shape("JSON Web Token", r"eyJ" + _no_word_before(3) + r"[A-Za-z0-9_-]{5,}\.eyJ"
           r"[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{10,}=*"),
    _shape("PEM private key", r"-----BEGIN (?P<label>[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?)-----"
           r"(?P<secret>.+?)(?=-----END (?P=label)-----|\Z)", flags=re.S),
    _shape("password in a URL", r"""://[^\s:@/?#"'<>\\`]*:(?P<secret>[^\s/?#"'<>\\`]+)@"""
           r"""(?=[^\s/?#"'<>\\`@]+)""", _whole(lambda p: not _PLACEHOLDER.fullmatch(p))),
    _shape("secret in a URL query", r"[?&](?i:token|access_token|api_key|apikey|key|sig|"
           r"signature|x-amz-signature|x-amz-security-token|auth|code)="
           r"""(?P<secret>[^&#\s"'<>\\`]+)""", _whole(_random_looking)),
    _shape("bearer token", r"(?i:bearer)[ \t]+(?P<secret>[A-Za-z0-9._~+/-]{8,}=*)"
           r"(?![A-Za-z0-9._~+/=-])", _whole(lambda t: len(t) >= 16 or _has_digit(t))),
    _shape("basic auth header", r"(?i:authorization)" + _ASSIGN + r"""["']?(?i:basic)[ \t]+"""
           r"(?P<secret>[A-Za-z0-9+/]{8,}=*)"),
    _shape("password assignment", r"(?P<key>(?i:pass(?:word|wd)|pwd))" + _ASSIGN + _VALUE,
           _assigned(_PASSWORD_NAME, 1)),
    _shape("API key assignment", r"(?P<key>(?i:key|secret|token|authorization))"
           + _ASSIGN + _VALUE, _assigned(_API_NAME, 8)),
)

_DATA_URI = re.compile(r"data:[\w/+.-]+;base64,[A-Za-z0-9+/=]+")
_SECRET_ENV_NAME = re.compile(r"(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?)$")
_NOT_SECRET_VALUES = {"true", "false", "none", "null", "yes", "no", "on", "off", "empty"}


def secret_env_values(environ: Mapping[str, str] | None = None) -> list[str]:
    """Values of environment variables whose names say they are secret (…_KEY, …TOKEN,
    …SECRET, …PASSWORD) and that are long enough to be one; longest first."""
    environ = os.environ if environ is None else environ
    found = set()
    for name, value in environ.items():
        parts = re.split(r"[^A-Za-z0-9]+", name.upper())
        if not any(_SECRET_ENV_NAME.search(part) for part in parts):
            continue
        value = value.strip()
        if (len(value) >= 8 and not any(c.isspace() for c in value)
                and value[0] not in "/~." and value.lower() not in _NOT_SECRET_VALUES
                and not value.isdigit()):
            found.add(value)
    return sorted(found, key=len, reverse=True)


def find_secrets(text: str, env_values: Iterable[str] = ()) -> list[tuple[int, int, str]]:
    """The secret spans in `text` as (start, end, format name), merged and in order."""
    spans: list[tuple[int, int, str]] = []
    for shape in SHAPES:
        for match in shape.pattern.finditer(text):
            span = shape.span(match)
            if span is not None:
                spans.append((span[0], span[1], shape.name))
    for value in env_values:
        start = text.find(value)
        while start >= 0:
            spans.append((start, start + len(value), "secret environment variable"))
            start = text.find(value, start + len(value))
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

    def spans(self, text: str) -> str:
        """Replace each secret span of `text`, whatever the text's structure."""
        found = find_secrets(text, self.env_values)
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
        if isinstance(value, Mapping):
            return {(self.text(k) if isinstance(k, str) else k): self._field(k, v)
                    for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.value(v) for v in value]
        return value

    def _field(self, key: Any, value: Any) -> Any:
        """A field's value: redacted as any value, and whole when its name says it is a
        secret ({"api_key": "demo-key-12345678"})."""
        if not isinstance(value, str) or not isinstance(key, str):
            return self.value(value)
        cleaned = self.text(value)
        if cleaned != value or not value or _PLACEHOLDER.fullmatch(value):
            return cleaned
        if ((_PASSWORD_NAME.fullmatch(key) or _API_NAME.fullmatch(key))
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
