"""Names pulled out of text by code, for the floor: file paths, URLs, DataFrame, column
and variable names (a printed table's columns: `_table_columns`; error lines:
`_error_lines`). General rules (how code, tables and tracebacks look), no lists of a
session's own names; each scan reads a bounded window of a text (its head and tail), so
extraction costs O(messages).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

from ._table_columns import table_columns

PATH, NAMED, TOKEN = 0, 1, 2  # priorities: a path, a name given a role, a token seen in passing
Found = tuple[str, int]

HEAD_CHARS = 3_000  # what a scan reads of a long text: its head and its tail
TAIL_CHARS = 1_000
MAX_NAME_CHARS = 80

_EXTENSIONS = (
    "csv|tsv|parquet|pq|feather|arrow|orc|avro|xlsx|xlsm|xls|ods|jsonl|ndjson|geojson|json|xml|"
    "ya?ml|toml|ini|cfg|conf|env|py|pyi|ipynb|R|Rmd|qmd|sql|txt|md|rst|log|tex|bib|pdf|docx?|"
    "pptx?|png|jpe?g|gif|svg|bmp|tiff?|webp|html?|js|ts|css|pkl|pickle|joblib|h5|hdf5?|nc|zarr|"
    "npz|npy|mat|sav|dta|sas7bdat|gz|bz2|xz|zst|zip|tar|7z|db|sqlite3?|duckdb|pt|pth|onnx|ckpt|"
    "safetensors|bin|sh|bat|dat"
)
# A word character of a name, for a character class: \udc80-\udcff is what an undecodable
# byte of a file name becomes (os.fsdecode). Public: `_evidence` reads words the same way.
NAME_CHARS = r"\w\udc80-\udcff"
_W = NAME_CHARS  # short, for the patterns below
_PATHS = re.compile(
    r"(?P<url>https?://[^\s\"'<>)\]`]+)"
    rf"|(?<![{_W}/.~-])(?P<file>(?:[{_W}.~-]+/)*[{_W}-][{_W}.-]*\.(?i:{_EXTENSIONS}))"
    rf"(?![{_W}/-])"
    rf"|(?<![{_W}/.~-])(?P<dir>(?:~|\.{{1,2}})?/[{_W}.-]{{2,}}(?:/[{_W}.-]+)*/?)(?![{_W}/])"
)
_PATH_ANCHOR = re.compile(rf"/|https?:|\.(?=[A-Za-z])(?i:{_EXTENSIONS})\b")
# Each pattern below starts with a character class and looks behind only after it: the
# regex engine then skips ahead fast (a leading lookbehind would be tried everywhere).
_TOKENS = re.compile(
    r"[A-Za-z_](?<![\w./~-][A-Za-z_])(?:"
    r"\w*(?:\.[A-Za-z_]\w*)+"  # dotted: sales_df.region, model.fit
    r"|[A-Za-z0-9_]*_\w*"  # snake_case
    r"|[a-z]*[A-Z]\w*"  # camelCase, PascalCase
    r"|[a-z0-9]+[A-Z]\w*"  # PascalCase with digits
    r"|[A-Z]+[a-z]\w*"  # an acronym, then a word: BMIScore
    r"|[A-Za-z]*\d\w*"  # letters then digits: df2, col1
    r")(?![\w])(\()?"
)
_ASSIGNED = re.compile(
    r"^[ \t]*((?:[A-Za-z_]\w*[ \t]*,[ \t]*)*[A-Za-z_]\w*)[ \t]*[-+*/]?=(?!=)",
    re.MULTILINE,
)
_DEFINED = re.compile(r"^[ \t]*(?:async[ \t]+)?(?:def|class)[ \t]+([A-Za-z_]\w*)", re.MULTILINE)
_SUBSCRIPT = re.compile(r"\[[^\]\n]{0,40}?(['\"])([^'\"\n\]]{1,60})\1")  # x['col'], x.loc[:, 'c']
_SUBSCRIPTED = re.compile(r"(?<![\w.])([A-Za-z_]\w*)(?:\.(?:loc|iloc|at))?$")  # before the [
_COLUMN_LIST = re.compile(r"\[\s*\[([^\]\n]{1,400})\]\s*\]")  # df[['a', 'b c']]
_ITEM = re.compile(r"(['\"])([^'\"\n]{1,40})\1")
_QUOTED = re.compile(r"(['\"`])(?<![\w\\]['\"`])([A-Za-z_][\w./%-]{0,60})\1")
_KEYWORD = re.compile(r"(\w+)[ \t]*=[ \t]*$")  # what precedes a keyword argument's value
_BACKTICKED = re.compile(r"`([^`\n]{1,80})`")
_IDENTIFIER = re.compile(r"^[A-Za-z_][\w.-]{0,60}$")
_HYPHENATED = re.compile(r"(?<![\w./~-])[A-Za-z]\w*(?:-\w+)+(?![\w/-])")  # A-1001, run-2-b

# Library aliases and generic attributes: a call on them names no data of the user's.
_MODULES = frozenset(
    "pd np plt sns os sys re json math sk sklearn scipy stats torch tf pl px go datetime dt "
    "time random itertools collections pathlib Path self cls super mpl matplotlib pandas numpy "
    "seaborn logging warnings typing io csv glob shutil subprocess".split()
)
_ATTRIBUTES = frozenset(
    "shape columns dtypes dtype index values loc iloc at iat str dt T size ndim empty head tail "
    "name names cat plot".split()
)
_COLUMN_KWARGS = frozenset(
    "on by x y hue columns subset index values id_vars value_vars usecols left_on right_on "
    "target label col row cols features column key keys group groupby sort_by parse_dates "
    "index_col name names path filepath file filename".split()
)
_NOISE = re.compile(  # library internals, dunders, dtypes, missing values, exception names
    r"site-packages|dist-packages|/lib/python\d|^<|^__\w+__$|^(?:u?int|float|complex)\d+$|"
    r"^(?:NaN|NaT|nan|inf|None|pd\.NA|<NA>)$|"
    r"^(?:Range|Multi|Datetime|Int64|Float64|Categorical|Period)?Index$|^(?:DataFrame|Series)$|"
    r"(?:Error|Exception|Warning)$"
)
_KEYWORDS = frozenset(
    "if else elif for while in is not and or return import from as with def class lambda "
    "try except finally raise pass break continue None True False print".split()
)


def window(text: str, head: int = HEAD_CHARS, tail: int = TAIL_CHARS) -> str:
    """The part of `text` a scan reads: all of it, or its head and its tail."""
    if len(text) <= head + tail:
        return text
    return f"{text[:head]}\n{text[-tail:]}"


def _clean(name: str) -> str | None:
    name = name.strip().rstrip(".,;:")
    if not name or len(name) > MAX_NAME_CHARS or name in _KEYWORDS or _NOISE.search(name):
        return None
    return name


def _tokens(text: str, priority: int) -> Iterator[Found]:
    for match in _TOKENS.finditer(text):
        token = match.group()
        call = token.endswith("(")
        token = token.rstrip("(")
        if not any(ch.isalpha() for ch in token):
            continue
        if "." in token:
            parts = token.split(".")
            if parts[0] in _MODULES or all(len(p) == 1 for p in parts):
                continue
            if call:
                parts = parts[:-1]  # a method call: the object is the name
            while len(parts) > 1 and parts[-1] in _ATTRIBUTES:
                parts = parts[:-1]
            token = ".".join(parts)
        yield token, priority


def _paths(text: str) -> Iterator[Found]:
    """Paths and URLs: the full pattern runs only on lines that hold a '/' or an extension."""
    done = -1
    for anchor in _PATH_ANCHOR.finditer(text):
        if anchor.start() < done:
            continue
        start = text.rfind("\n", 0, anchor.start()) + 1
        done = text.find("\n", anchor.end())
        done = len(text) if done < 0 else done
        for match in _PATHS.finditer(text, start, done):
            yield match.group(), PATH


def is_capitals(name: str) -> bool:
    """A word of capitals only (FR, GDP): a value's or an acronym's shape, not code's."""
    return name.isalpha() and name.isupper()


def is_path(name: str) -> bool:
    return _PATHS.fullmatch(name) is not None


def _subscripts(text: str, *, frames: bool) -> Iterator[Found]:
    """Columns in subscripts (x['col'], x.loc[:, 'col']), and with `frames` the frame."""
    for match in _SUBSCRIPT.finditer(text):
        frame = _SUBSCRIPTED.search(text, max(0, match.start() - 80), match.start())
        if frame is None:
            continue
        if frames and frame.group(1) not in _MODULES:
            yield frame.group(1), NAMED
        yield match.group(2), NAMED


def _code(text: str) -> Iterator[Found]:
    """Names code gives a role: assigned, defined, subscripted, quoted as a column."""
    for match in _ASSIGNED.finditer(text):
        for name in match.group(1).split(","):
            name = name.strip()
            if len(name) > 1 or name.isupper():
                yield name, NAMED
    for match in _DEFINED.finditer(text):
        yield match.group(1), NAMED
    yield from _subscripts(text, frames=True)
    for match in _COLUMN_LIST.finditer(text):
        yield from ((item.group(2), NAMED) for item in _ITEM.finditer(match.group(1)))
    yield from _quoted(text, TOKEN)


def _quoted(text: str, elsewhere: int | None) -> Iterator[Found]:
    """Quoted names: in a list or a column argument they name something (NAMED); as
    other keyword values they are options (how="left": skipped); else `elsewhere`."""
    for match in _QUOTED.finditer(text):
        value = match.group(2)
        keyword = _KEYWORD.search(text, max(0, match.start() - 40), match.start())
        if keyword is not None:
            if keyword.group(1) in _COLUMN_KWARGS:
                yield value, NAMED
            continue
        before = text[max(0, match.start() - 3) : match.start()].rstrip()
        if before.endswith(("[", ",")):
            yield value, NAMED
        elif elsewhere is not None:
            yield value, elsewhere


def _backticked(text: str) -> Iterator[Found]:
    for match in _BACKTICKED.finditer(text):
        inner = match.group(1).strip()
        if _IDENTIFIER.match(inner):
            yield inner, NAMED
        else:
            yield from _code(inner)


_CAPITALISED = re.compile(r"\b[A-Z][\w%/-]*(?:[ \t]+[A-Z][\w%/-]*)+")  # Visitor Rating
_FOCUS_WORD = re.compile(rf"[{_W}][{_W}./%-]*")


def quoted_in(text: str) -> list[str]:
    """Text quoted ('…', "…") or backticked in `text`."""
    return [m.group(2) for m in _ITEM.finditer(text)] + [
        m.group(1).strip() for m in _BACKTICKED.finditer(text)]


def names_in_focus(focus: str) -> list[str]:
    """What a compaction's focus may name, most specific first: quoted or backticked text,
    runs of capitalised words and their shorter runs ("Keep Visitor Rating" →
    "Visitor Rating"), then each word. Which of them are names is decided against what is
    folded (`_floor.focus_names`)."""
    found = quoted_in(focus)
    for run in _CAPITALISED.finditer(focus):
        words = run.group().split()
        found += [" ".join(words[i:j]) for size in range(len(words), 1, -1)
                  for i in range(len(words) - size + 1) for j in (i + size,)]
    found += [w.rstrip(".-/") for w in _FOCUS_WORD.findall(focus)]
    return [name for name in dict.fromkeys(found) if name and len(name) <= MAX_NAME_CHARS]


def names_in_user_text(text: str) -> Iterator[Found]:
    text = window(text, 2 * HEAD_CHARS, 2 * TAIL_CHARS)
    yield from _paths(text)
    yield from _backticked(text)  # what the user names is never a token seen in passing:
    yield from ((name, min(p, NAMED)) for name, p in _code(text))
    yield from _tokens(text, NAMED)


def names_in_assistant_text(text: str) -> Iterator[Found]:
    text = window(text)
    yield from _paths(text)
    yield from _backticked(text)
    yield from _code(text)
    yield from _tokens(text, TOKEN)


def names_in_code(code: str) -> Iterator[Found]:
    """Names in code a model wrote in its message (a fenced block)."""
    code = window(code)
    yield from _paths(code)
    yield from _code(code)
    yield from _tokens(code, TOKEN)


def names_in_arguments(arguments: str) -> Iterator[Found]:
    """Names in a tool call's JSON arguments: short identifier values, and code."""
    try:
        parsed = json.loads(arguments) if arguments.strip() else {}
    except json.JSONDecodeError:
        parsed = arguments
    values = parsed.values() if isinstance(parsed, dict) else [parsed]
    for value in values:
        if not isinstance(value, str):
            continue
        if _IDENTIFIER.match(value) and "." not in value:
            yield value, NAMED
            continue
        text = window(value)
        yield from _paths(text)
        yield from _code(text)
        yield from _tokens(text, TOKEN)


def names_in_notes(text: str) -> Iterator[Found]:
    """Names in a summarizer's notes, all of them (no window): paths, tokens shaped like
    code, and ids joined by hyphens with a digit in them (A-1001, but not follow-up)."""
    yield from _paths(text)
    yield from _tokens(text, TOKEN)
    for match in _HYPHENATED.finditer(text):
        if any(ch.isdigit() for ch in match.group()):
            yield match.group(), NAMED


_CODE_SHAPED = re.compile(r"[_.\d]|[a-z][A-Z]")  # snake, dotted, digits, camelCase


def names_in_output(text: str) -> Iterator[Found]:
    """Names in what a tool or a cell printed: paths, a printed table's columns, subscripts
    and quoted list items, and tokens shaped like code. A plain word in capitals or with
    one (`FR`, `Paris`: a table's cell values, words of a message) is not a name here."""
    text = window(text)
    yield from _paths(text)
    yield from ((name, NAMED) for name in table_columns(text))
    yield from _subscripts(text, frames=False)
    yield from _quoted(text, None)
    yield from ((name, p) for name, p in _tokens(text, TOKEN) if _CODE_SHAPED.search(name))


def clean(found: Iterator[Found]) -> Iterator[Found]:
    for name, priority in found:
        cleaned = _clean(name)
        if cleaned is not None:
            yield cleaned, priority
