"""`estimate_tokens`: how many tokens a text costs o200k_base, with no tokenizer and no
network — each byte's class and its predecessor's, priced by fitted weights, counted
with str/bytes methods that run in C. Counting whole messages is `_tokens`'.
"""

from __future__ import annotations

from collections import Counter

# How the estimator works. o200k_base first splits text into pieces (a word with its
# leading space or punctuation mark, up to three digits, a run of punctuation, a run of
# whitespace) and then spends about one token per piece, more on rare words, long
# punctuation runs and non-Latin scripts. The estimator counts those pieces from the
# class of each byte and of the byte before it, with str/bytes methods that run in C:
#   1. every UTF-8 byte becomes one of 15 classes (`_CLASS`, one `bytes.translate`);
#   2. one big-integer multiply puts each byte's class beside its predecessor's, so
#      every position becomes a pair code 16 * class + previous class;
#   3. each pair code maps to a weight (`_bucket` names it, `_WEIGHTS` prices it), and
#      one `bytes.count` per distinct weight sums them;
#   4. a few patterns that need three bytes or a run length (two spaces before a word,
#      a punctuation run before a word, digit runs past 3, 6, 9, 12) are counted the same
#      way on the class string or a coarser copy of it.
# The structural weights (one token per piece) follow o200k's pre-tokenizer; the others
# are fitted by `python bench/estimator_accuracy.py --fit` on one half of each corpus in
# bench/corpora.py and checked on the other half (docs/performance.md).

_LOWER, _UPPER, _DIGIT, _SPACE, _NEWLINE, _PUNCT, _REPEAT, _CONT = range(1, 9)
_LATIN2, _SYMBOL, _CJK, _HANGUL, _ASTRAL, _SLASH, _JOIN = range(9, 16)
_LETTERS = (_LOWER, _UPPER)
_PUNCTUATION = (_PUNCT, _REPEAT, _SLASH, _JOIN)


def _byte_class(byte: int) -> int:
    """The class of one UTF-8 byte; a lead byte stands for its whole character."""
    if byte >= 0x80:
        for first, kind in (
            (0xF0, _ASTRAL),  # emoji and other characters beyond the BMP
            (0xEE, _SYMBOL),  # fullwidth forms, variation selectors
            (0xEA, _HANGUL),
            (0xE3, _CJK),  # kana, CJK punctuation and ideographs
            (0xE0, _SYMBOL),  # general punctuation, arrows, box drawing, Indic scripts
            (0xC0, _LATIN2),  # accented Latin, Greek, Cyrillic, Hebrew, Arabic
        ):
            if byte >= first:
                return kind
        return _CONT
    char = chr(byte)
    if char.isalpha():
        return _LOWER if char.islower() else _UPPER
    if char.isdigit():
        return _DIGIT
    if char in " \t":
        return _SPACE
    if char in "\r\n":
        return _NEWLINE
    if char in "^~=-#*":
        return _REPEAT  # the characters of rules and underlines (=====, ^^^^^)
    if char in "/\\":
        return _SLASH
    if char in "._":
        return _JOIN  # "df.describe", "sales_df": usually one token with the word after
    return _PUNCT


_CLASS = bytes(_byte_class(byte) for byte in range(256))


def _bucket(cur: int, prev: int) -> str | None:
    """Name what a byte of class `cur` after one of class `prev` adds (None: nothing)."""
    if cur in _LETTERS:
        if prev in _LETTERS:
            if (prev, cur) == (_LOWER, _UPPER):
                return "camel"  # o200k starts a new piece at a lower-to-upper change
            return "upper_run" if cur == prev == _UPPER else "letter_run"
        if prev == _SLASH:
            return "after_slash"
        if prev == _JOIN:
            return "after_join"
        if prev in _PUNCTUATION:
            return "after_punct"
        return "letter_after_char" if prev == _CONT else "word"
    if cur == _DIGIT:
        if prev == _DIGIT:
            return None  # groups of three: the digit-run patterns
        return "digit_after_space" if prev == _SPACE else "digit"
    if cur == _NEWLINE:
        if prev == _SPACE:
            return "newline_after_space"
        return None if prev in (_NEWLINE, *_PUNCTUATION) else "newline"
    if cur in _PUNCTUATION:
        if prev in _PUNCTUATION:
            return "repeat_run" if cur == prev == _REPEAT else "punct_run"
        return "punct_after_char" if prev == _CONT else "punct"
    if cur == _LATIN2:
        return "latin2_after_char" if prev == _CONT else "latin2"
    return {_SYMBOL: "symbol", _CJK: "cjk", _HANGUL: "hangul", _ASTRAL: "astral"}.get(cur)


# A coarser copy of the class string for three-byte patterns: letters, digits, spaces,
# punctuation, newlines and everything else.
_SHAPE_OF = {_LOWER: "a", _UPPER: "a", _DIGIT: "0", _SPACE: " ", _NEWLINE: "n"}
_SHAPE = bytes(ord(_SHAPE_OF.get(c, "." if c in _PUNCTUATION else "u")) for c in range(256))
_DIGITS = bytes(ord("0") if c == _DIGIT else ord(".") for c in range(256))  # of classes

# (name, which string, pattern): class string "x", shape string "z", digit string "d".
_PATTERNS: tuple[tuple[str, str, bytes], ...] = (
    ("punct_run_then_word", "z", b"..a"),  # "({x": the word is a piece of its own
    ("space_punct_then_word", "z", b" .a"),  # ' "x': so is this one
    ("spaces_then_word", "z", b"  a"),  # two or more spaces are a piece of their own
    ("spaces_then_punct", "z", b"  ."),
    ("spaces_then_digit", "z", b"  0"),
    ("spaces_then_other", "z", b"  u"),
    ("long_word", "x", bytes([_LOWER]) * 10),  # rare long words split into chunks
    ("very_long_word", "x", bytes([_LOWER]) * 16),
    ("punct_run_4", "x", bytes([_PUNCT]) * 4),
    ("caps_then_lower", "x", bytes([_UPPER, _UPPER, _LOWER])),  # base64, ALLCaps words
)
_DIGIT_RUNS = tuple(b"." + b"0" * n for n in (4, 7, 10, 13))  # one more piece each
# Characters a lead byte cannot tell apart, counted on the UTF-8 bytes of a text that has
# any beyond ASCII (their first two bytes): fullwidth forms (U+FF00–FF7F: the comma,
# colon and brackets of Chinese and Japanese prose) share their lead byte with the
# variation selectors of emoji, but o200k merges them with the characters around them.
_RAW_COUNTS: tuple[tuple[str, tuple[bytes, ...]], ...] = (
    ("fullwidth", (b"\xef\xbc", b"\xef\xbd")),
)

_WEIGHTS: dict[str, float] = {
    # One token per piece, as o200k's pre-tokenizer splits text (fixed, never fitted).
    "word": 1.0,
    "camel": 1.0,
    "digit": 1.0,
    "digit_after_space": 2.0,  # the space before a number is a piece of its own
    "digit_run": 1.0,
    "punct": 1.0,
    "newline": 1.0,
    "newline_after_space": 1.0,
    "spaces_then_word": 1.0,
    "spaces_then_punct": 1.0,
    "spaces_then_digit": 1.0,
    "spaces_then_other": 1.0,
    # Fitted by bench/estimator_accuracy.py --fit: what BPE spends beyond that. A word
    # after a mark shares the mark's piece unless a run or a space precedes the mark.
    "after_punct": 1.0,
    "after_slash": 1.3125,
    "after_join": 0.0625,
    "punct_run_then_word": 0.0625,
    "space_punct_then_word": 0.375,
    "upper_run": 0.3125,
    "repeat_run": 0.25,
    "letter_after_char": 0.0,
    "punct_after_char": 1.125,
    "long_word": 1.4375,
    "very_long_word": 2.0625,
    "punct_run_4": 2.5625,
    "caps_then_lower": 2.375,
    # Characters beyond ASCII, per character (fitted, pulled towards byte-level priors).
    "latin2": 0.5,
    "latin2_after_char": 0.5,
    "symbol": 1.25,
    "cjk": 0.8125,
    "hangul": 0.75,
    "astral": 2.125,
    "fullwidth": -0.75,  # on top of "symbol": a correction, so it may be below zero
}


def _pairs(classes: bytes) -> bytes:
    """Each position as 16 * class + previous class (0 before the first byte).

    `classes` holds values 1..15, so multiplying its big-endian integer by 4097
    (shift one byte and times 16, plus itself) adds the neighbours without carries.
    """
    return (int.from_bytes(classes, "big") * 4097).to_bytes(len(classes) + 2, "big")


_ASCII_CLASSES = frozenset({0, *range(_LOWER, _CONT), _SLASH, _JOIN})


def _levels() -> tuple[bytes, tuple[tuple[bytes, float], ...], tuple[tuple[bytes, float], ...]]:
    """A table from pair code to one byte per distinct weight; the (byte, weight) levels
    for any text, and those an ASCII-only text can reach."""
    weights = sorted({w for w in _WEIGHTS.values() if w})
    table = bytearray(256)
    ascii_weights: set[float] = set()
    for code in range(16, 256):
        name = _bucket(code >> 4, code & 15)
        weight = _WEIGHTS.get(name, 0.0) if name else 0.0
        if weight:
            table[code] = 1 + weights.index(weight)
            if {code >> 4, code & 15} <= _ASCII_CLASSES:
                ascii_weights.add(weight)
    levels = tuple((bytes([1 + i]), w) for i, w in enumerate(weights) if table.count(1 + i))
    return bytes(table), levels, tuple(lv for lv in levels if lv[1] in ascii_weights)


_LEVEL, _ALL_LEVELS, _ASCII_LEVELS = _levels()


def estimate_tokens(text: str) -> int:
    """Estimate how many tokens `text` costs o200k_base (GPT-4o and later).

    Within a few per cent of the real count on what notebooks produce — prose, code,
    JSON, logs, tracebacks, DataFrame printouts, LaTeX, base64, CJK, emoji — and
    faster than tokenizing (figures in docs/performance.md). Errs high rather than low.
    """
    if not text:
        return 0
    raw = text.encode("utf-8", "surrogatepass")
    classes = raw.translate(_CLASS)
    pairs = _pairs(classes).translate(_LEVEL)
    total = 0.0
    for level, weight in _ASCII_LEVELS if len(raw) == len(text) else _ALL_LEVELS:
        total += weight * pairs.count(level)
    shape = classes.translate(_SHAPE)
    for name, view, pattern in _PATTERNS:
        found = (shape if view == "z" else classes).count(pattern)
        if found:
            total += _WEIGHTS[name] * found
    if _DIGIT in classes:  # bytes([_DIGIT]) membership: a memchr
        total += _WEIGHTS["digit_run"] * _digit_runs(classes.translate(_DIGITS))
    if len(raw) != len(text):
        for name, sequences in _RAW_COUNTS:
            total += _WEIGHTS[name] * sum(raw.count(s) for s in sequences)
    return max(1, round(total))


def _digit_runs(digits: bytes) -> int:
    """Pieces beyond the first in every digit run (o200k splits digits in threes)."""
    extra = sum(digits.count(run) for run in _DIGIT_RUNS)
    if digits[:1] == b"0":  # a run at the very start has no "." before it
        end = digits.find(b".")
        extra += ((len(digits) if end < 0 else end) - 1) // 3
    return extra


def _features(text: str) -> dict[str, int]:
    """How often each weighted feature occurs in `text`: the estimate is the weighted sum.

    The slow, plain path (one counter over all pair codes), for fitting the weights and
    for checking that `estimate_tokens` computes the same sum.
    """
    raw = text.encode("utf-8", "surrogatepass")
    classes = raw.translate(_CLASS)
    found: Counter[str] = Counter()
    for code, n in Counter(_pairs(classes)).items():
        name = _bucket(code >> 4, code & 15) if code >= 16 else None
        if name:
            found[name] += n
    shape = classes.translate(_SHAPE)
    for name, view, pattern in _PATTERNS:
        found[name] += (shape if view == "z" else classes).count(pattern)
    found["digit_run"] += _digit_runs(classes.translate(_DIGITS))
    for name, sequences in _RAW_COUNTS:
        found[name] += sum(raw.count(s) for s in sequences)
    return dict(found)
