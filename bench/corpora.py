"""Text corpora for the token estimator: the kinds of text a notebook agent sends.

Built on this machine from what ships with Python and the installed packages
(stdlib sources and docstrings, its CJK codec test files, CLDR names in babel,
JupyterLab's minified bundles, nbconvert's LaTeX templates, numpy docstrings),
Chinese, Japanese and Korean prose written for it (bench/texts/), plus seeded
generated data (JSON, logs, DataFrame printouts, base64, emoji).
Nothing is downloaded and every run builds the same text.

Every corpus is two halves drawn from different sources or seeds: the estimator's
weights are fitted on `train` and its error is reported on `held_out`.
"""

from __future__ import annotations

import ast
import base64
import importlib.util
import io
import json
import os
import random
import re
import sysconfig
import traceback
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_STDLIB = Path(sysconfig.get_paths()["stdlib"])
SAMPLE_CHARS = 4_000
SAMPLES_PER_HALF = 16


@dataclass(frozen=True)
class Corpus(Sequence[str]):
    """Samples of one kind of text: `train` then `held_out`, as one sequence too."""

    train: list[str]
    held_out: list[str]

    def __getitem__(self, index: Any) -> Any:
        return (self.train + self.held_out)[index]

    def __len__(self) -> int:
        return len(self.train) + len(self.held_out)


def _chunks(text: str, limit: int = SAMPLES_PER_HALF, size: int = SAMPLE_CHARS) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size) if text[i : i + size].strip()][
        :limit
    ]


def _package_dir(name: str) -> Path | None:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _words(rng: random.Random, vocabulary: list[str], n: int) -> str:
    return " ".join(rng.choice(vocabulary) for _ in range(n))


# ---- prose and code ---------------------------------------------------------------------------


def _docstrings(files: tuple[str, ...]) -> str:
    texts = []
    for name in files:
        tree = ast.parse((_STDLIB / name).read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.Module, ast.AsyncFunctionDef)):
                doc = ast.get_docstring(node)
                if doc and len(doc) > 200:
                    texts.append(doc)
    return "\n\n".join(texts)


def english_prose() -> Corpus:
    """Docstring prose from the stdlib: different modules in each half."""
    train = ("argparse.py", "subprocess.py", "logging/__init__.py", "typing.py", "asyncio/tasks.py")
    held_out = (
        "collections/__init__.py",
        "email/message.py",
        "http/client.py",
        "pathlib.py",
        "threading.py",
        "zipfile.py",
        "tarfile.py",
        "inspect.py",
    )
    return Corpus(_chunks(_docstrings(train)), _chunks(_docstrings(held_out)))


def python_code() -> Corpus:
    def source(files: tuple[str, ...]) -> str:
        return "\n".join((_STDLIB / f).read_text(encoding="utf-8") for f in files)

    train = ("json/decoder.py", "textwrap.py", "dataclasses.py", "csv.py", "statistics.py")
    held_out = ("fractions.py", "heapq.py", "shlex.py", "difflib.py", "calendar.py")
    return Corpus(_chunks(source(train)), _chunks(source(held_out)))


# ---- structured tool output -------------------------------------------------------------------

_NAMES = [
    "alpha",
    "beta",
    "sensor",
    "north",
    "revenue",
    "cohort",
    "pending",
    "ok",
    "error",
    "customer",
    "region",
    "forecast",
    "label",
    "weight",
    "station",
    "batch",
    "sku",
]
_NAMES_2 = [
    "delta",
    "gamma",
    "device",
    "south",
    "margin",
    "segment",
    "active",
    "failed",
    "account",
    "city",
    "estimate",
    "target",
    "height",
    "sample",
    "order",
    "product",
]


def _json_documents(seed: int, names: list[str]) -> list[str]:
    rng = random.Random(seed)
    documents = []
    for index in range(SAMPLES_PER_HALF):
        style = index % 4
        records: list[Any] = []
        while len(json.dumps(records)) < SAMPLE_CHARS * 0.8:
            records.append(
                {
                    "id": f"rec-{rng.randint(0, 99_999):05d}",
                    "uuid": f"{rng.getrandbits(128):032x}",
                    "name": f"{rng.choice(names)}_{rng.choice(names)}",
                    "value": round(rng.uniform(-1000, 1000), rng.randint(1, 6)),
                    "count": rng.randint(0, 10_000),
                    "tags": rng.sample(names, 3),
                    "active": rng.random() > 0.5,
                    "score": None if rng.random() < 0.2 else rng.random(),
                    "updated": f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T"
                    f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:00Z",
                    "url": f"https://api.example.com/v2/{rng.choice(names)}/{rng.randint(1, 9999)}",
                }
            )
        if style == 0:
            text = json.dumps(records, indent=2)
        elif style == 1:
            text = json.dumps(records)
        elif style == 2:
            text = json.dumps(
                {"status": "ok", "page": index, "data": {"items": records, "total": len(records)}},
                indent=4,
            )
        else:
            text = "\n".join(json.dumps(record, separators=(",", ":")) for record in records)
        documents.append(text[:SAMPLE_CHARS])
    return documents


def json_tool_output() -> Corpus:
    """Indented, compact, nested and JSON-lines records (different seeds and field words)."""
    return Corpus(_json_documents(7, _NAMES), _json_documents(8, _NAMES_2))


def _frames(seed: int, wide: bool) -> list[Any]:
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(seed)
    frames = []
    for index in range(SAMPLES_PER_HALF):
        columns = int(rng.integers(12, 30)) if wide else int(rng.integers(4, 9))
        scales = 10.0 ** rng.integers(-3, 6, size=columns)
        data = rng.normal(size=(int(rng.integers(40, 400)), columns)) * scales
        if index % 3 == 1:
            data[rng.random(data.shape) < 0.1] = np.nan
        frame = pd.DataFrame(
            data, columns=[f"{_NAMES[i % len(_NAMES)]}_{i}" for i in range(columns)]
        )
        if index % 2:
            frame["count"] = rng.integers(0, 100_000, size=len(frame))
        if not wide and index % 4 == 2:
            frame.insert(0, "when", pd.date_range("2026-01-01", periods=len(frame), freq="h"))
            frame["city"] = rng.choice(["Lyon", "Osaka", "Quito", "Perth", "Oslo"], size=len(frame))
        frames.append(frame)
    return frames


def _dataframe_printouts(seed: int) -> list[str]:
    import pandas as pd

    texts = []
    for index, frame in enumerate(_frames(seed, wide=False)):
        with pd.option_context("display.max_rows", 60, "display.width", 120):
            text = frame.to_string() if index % 2 else repr(frame)
        texts.append(text[:SAMPLE_CHARS])
    return texts


def dataframe_printout() -> Corpus:
    """Numeric DataFrames as a notebook prints them: floats, ints, NaN, dates, labels."""
    return Corpus(_dataframe_printouts(3), _dataframe_printouts(4))


def _describe_and_wide(seed: int) -> list[str]:
    import numpy as np
    import pandas as pd

    texts = []
    for index, frame in enumerate(_frames(seed, wide=True)):
        with pd.option_context("display.width", 80 + 40 * (index % 3), "display.max_columns", 40):
            if index % 4 == 0:
                text = repr(frame.describe())
            elif index % 4 == 1:
                text = repr(frame.head(30))
            elif index % 4 == 2:
                text = repr(frame.corr().round(4))
            else:
                with np.printoptions(precision=6, linewidth=100):
                    text = repr(frame.to_numpy()[:40])
        texts.append(text[:SAMPLE_CHARS])
    return texts


def describe_and_wide_floats() -> Corpus:
    """`df.describe()`, wide float tables, correlation matrices and numpy array reprs."""
    return Corpus(_describe_and_wide(5), _describe_and_wide(6))


_MODULES = ["worker.pipeline", "api.handlers", "db.pool", "scheduler", "auth.session", "etl.load"]
_MODULES_2 = ["ingest.reader", "web.routes", "cache.redis", "trainer", "billing.invoice", "sync"]
_EVENTS = [
    "processed batch",
    "retrying request",
    "connection opened",
    "cache miss for key",
    "slow query detected",
    "user logged in",
    "wrote checkpoint",
    "queue depth",
]
_EVENTS_2 = [
    "loaded partition",
    "timeout waiting for",
    "pool exhausted",
    "evicted entry",
    "request completed",
    "token refreshed",
    "skipped malformed row",
    "lag behind",
]


def _log_lines(seed: int, modules: list[str], events: list[str]) -> list[str]:
    rng = random.Random(seed)
    levels = ["DEBUG", "INFO", "INFO", "INFO", "WARNING", "ERROR"]
    samples = []
    for index in range(SAMPLES_PER_HALF):
        lines: list[str] = []
        style = index % 4
        epoch = 0
        while sum(map(len, lines)) < SAMPLE_CHARS:
            h, m, s, ms = (
                rng.randint(0, 23),
                rng.randint(0, 59),
                rng.randint(0, 59),
                rng.randint(0, 999),
            )
            if style == 0:
                lines.append(
                    f"2026-03-{rng.randint(1, 28):02d} {h:02d}:{m:02d}:{s:02d},{ms:03d} "
                    f"{rng.choice(levels):<8} [{rng.choice(modules)}] {rng.choice(events)} "
                    f"{rng.randint(1, 99999)} in {rng.random() * 3:.3f}s "
                    f"(rows={rng.randint(0, 10**6)})"
                )
            elif style == 1:
                ip = ".".join(str(rng.randint(1, 254)) for _ in range(4))
                path = f"/{rng.choice(modules).replace('.', '/')}/{rng.randint(1, 500)}"
                lines.append(
                    f"{ip} - - [{rng.randint(1, 28):02d}/Mar/2026:{h:02d}:{m:02d}:{s:02d} +0000] "
                    f'"{rng.choice(["GET", "POST", "PUT"])} {path}'
                    f'?page={rng.randint(1, 40)} HTTP/1.1" '
                    f'{rng.choice([200, 200, 201, 304, 404, 500])} {rng.randint(100, 99999)} "-" '
                    f'"python-requests/2.{rng.randint(20, 32)}.0"'
                )
            elif style == 2:
                epoch += 1
                lines.append(
                    f"Epoch {epoch}/200 - {rng.randint(5, 90)}s {rng.randint(10, 400)}ms/step - "
                    f"loss: {rng.random():.4f} - accuracy: {rng.random():.4f} - "
                    f"val_loss: {rng.random():.4f} - val_accuracy: {rng.random():.4f}"
                )
            else:
                lines.append(
                    f"Mar {rng.randint(1, 28):2d} {h:02d}:{m:02d}:{s:02d} host-{rng.randint(1, 9)} "
                    f"{rng.choice(modules).split('.')[0]}[{rng.randint(100, 65000)}]: "
                    f"{rng.choice(levels).lower()}: {rng.choice(events)} "
                    f"id={rng.getrandbits(32):08x} attempt={rng.randint(1, 5)}"
                )
        samples.append("\n".join(lines)[:SAMPLE_CHARS])
    return samples


def log_file() -> Corpus:
    """Application, access, training-progress and syslog lines (different words per half)."""
    return Corpus(_log_lines(11, _MODULES, _EVENTS), _log_lines(12, _MODULES_2, _EVENTS_2))


def _failures(kinds: list[Callable[[], object]]) -> list[str]:
    texts = []
    for fail in kinds:
        try:
            fail()
        except Exception as error:  # each `fail` raises by design
            texts.append("".join(traceback.format_exception(error)))
    return texts


def _ansi(text: str) -> str:
    """A traceback coloured the way IPython prints it in a notebook output."""
    lines = []
    for line in text.splitlines():
        if line.startswith("  File "):
            lines.append(f"\x1b[0;32m{line}\x1b[0m")
        elif line and not line.startswith(" "):
            lines.append(f"\x1b[0;31m{line}\x1b[0m")
        else:
            lines.append(line)
    return "\x1b[0;31m" + "-" * 75 + "\x1b[0m\n" + "\n".join(lines)


def _pandas_failures(first: bool) -> list[Callable[[], object]]:
    import numpy as np
    import pandas as pd

    frame = pd.DataFrame({"a": [1, 2], "b": [3.0, 4.0]})
    if first:
        return [
            lambda: frame["missing_column"],
            lambda: frame.merge(frame, on="nope"),
            lambda: np.ones((3, 4)) @ np.ones((3, 4)),
            lambda: frame.astype({"a": "datetime64[ns]"}).loc["x"],
            lambda: pd.read_csv(io.StringIO("a,b\n1,2,3\n4,5\n")),
        ]
    return [
        lambda: frame.loc[:, ["a", "zzz"]],
        lambda: frame.groupby("nope").sum(),
        lambda: np.reshape(np.arange(10), (3, 4)),
        lambda: pd.to_datetime(pd.Series(["2026-13-45"])),
        lambda: pd.read_json(io.StringIO('{"a": [1, 2], "b": [1]}')),
    ]


def _nested(depth: int, fail: Callable[[], object]) -> object:
    return fail() if depth == 0 else _nested(depth - 1, fail)


def _chained(fail: Callable[[], object]) -> Callable[[], object]:
    """A failure re-raised from a handler: the traceback shows both, as Python chains them."""

    def run() -> object:
        try:
            return _nested(3, fail)
        except Exception as error:
            raise RuntimeError(f"step failed: {error}") from error

    return run


def traceback_text() -> Corpus:
    """Real tracebacks from stdlib, pandas and numpy failures, plain and ANSI-coloured."""
    import datetime
    import decimal
    import importlib
    import ipaddress
    import math
    import struct
    import zipfile

    first = [
        lambda: json.loads('{"a": 1,, }'),
        lambda: int("12a"),
        lambda: _nested(6, lambda: {"k": 1}["missing"]),
        lambda: re.compile("(unclosed"),
        _chained(lambda: datetime.datetime.strptime("2026/03/01", "%Y-%m-%d")),
        _chained(lambda: sorted([1, "a", 2.5])),
        lambda: open("/nonexistent/data/sales_2026.csv"),
        _chained(lambda: math.sqrt(-1)),
        *_pandas_failures(True),
    ]
    second = [
        lambda: decimal.Decimal("1.2.3"),
        lambda: ipaddress.ip_address("300.1.1.1"),
        lambda: _nested(8, lambda: [1, 2, 3][10]),
        _chained(lambda: bytes([1, 2]).decode("utf-16")),
        lambda: "abc".index("z"),
        _chained(lambda: importlib.import_module("no_such_module.sub")),
        lambda: zipfile.ZipFile(io.BytesIO(b"not a zip archive")),
        _chained(lambda: struct.unpack("<I", b"ab")),
        *_pandas_failures(False),
    ]

    def samples(kinds: list[Callable[[], object]]) -> list[str]:
        texts = _failures(kinds)
        return (texts + [_ansi(text) for text in texts])[: 2 * SAMPLES_PER_HALF]

    return Corpus(samples(first), samples(second))


# ---- markup, math and encodings ---------------------------------------------------------------


def _minified_html(seed: int) -> list[str]:
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(seed)
    texts = []
    for index in range(SAMPLES_PER_HALF // 2):
        frame = pd.DataFrame(
            rng.normal(size=(30, 5)).round(int(rng.integers(1, 5))),
            columns=[_NAMES[(seed + i) % len(_NAMES)] for i in range(5)],
        )
        html = (
            frame.to_html()
            if index % 2
            else frame.style.set_uuid("t").format(precision=3).to_html()
        )
        texts.append(re.sub(r">\s+<", "><", html).replace("\n", "")[:SAMPLE_CHARS])
    return texts


def _minified_js(first: bool) -> list[str]:
    folder = _package_dir("jupyterlab")
    files = sorted((folder / "static").glob("*.js")) if folder else []
    files = [f for f in files if f.stat().st_size > 2 * SAMPLE_CHARS]
    chosen = files[0::2] if first else files[1::2]
    texts = []
    for path in chosen[: SAMPLES_PER_HALF // 2]:
        text = path.read_text(encoding="utf-8", errors="replace")
        texts.append(text[len(text) // 3 : len(text) // 3 + SAMPLE_CHARS])
    return texts


def minified_html_js() -> Corpus:
    """JupyterLab's minified bundles and whitespace-stripped DataFrame HTML."""
    return Corpus(_minified_js(True) + _minified_html(1), _minified_js(False) + _minified_html(2))


_GREEK = ["alpha", "beta", "gamma", "delta", "epsilon", "theta", "lambda", "mu", "sigma", "omega"]


def _formulas(seed: int) -> str:
    rng = random.Random(seed)

    def term() -> str:
        g = "\\" + rng.choice(_GREEK)
        choices = [
            f"{g}_{{{rng.choice('ijkn')}}}",
            f"\\frac{{{rng.choice('xyz')}^{{{rng.randint(2, 4)}}}}}{{{g} + {rng.randint(1, 9)}}}",
            f"\\sqrt{{{rng.choice('abc')}^2 + {g}^2}}",
            f"\\sum_{{{rng.choice('ijk')}=1}}^{{N}} {g}_{{{rng.choice('ijk')}}} "
            f"x_{{{rng.choice('ijk')}}}",
            f"\\mathbb{{E}}\\left[{rng.choice('XYZ')} \\mid {g}\\right]",
            f"\\int_{{0}}^{{\\infty}} e^{{-{g} t}}\\,dt",
            f"\\hat{{{rng.choice('xyz')}}}_{{t+{rng.randint(1, 3)}}}",
        ]
        return rng.choice(choices)

    blocks = []
    while sum(map(len, blocks)) < SAMPLES_PER_HALF * SAMPLE_CHARS // 3:
        body = " + ".join(term() for _ in range(rng.randint(2, 5)))
        env = rng.choice(["equation", "align*", "multline"])
        blocks.append(
            f"\\begin{{{env}}}\n  {term()} = {body}\n\\end{{{env}}}\n"
            f"where ${term()}$ is the {rng.choice(_NAMES)} term.\n"
        )
    return "\n".join(blocks)


def _latex_sources(first: bool) -> str:
    parts = []
    folder = _package_dir("numpy")
    if folder is not None:
        math = re.compile(r"\.\. math::[ \t]*\n\n((?:[ \t]+\S.*\n)+)|:math:`([^`]+)`")
        files = sorted(folder.rglob("*.py"))
        for path in files[0::2] if first else files[1::2]:
            for block, inline in math.findall(path.read_text(encoding="utf-8", errors="replace")):
                parts.append((block or f"${inline}$").replace("\\\\", "\\"))
    share = Path(sysconfig.get_paths()["data"]) / "share" / "jupyter" / "nbconvert" / "templates"
    templates = sorted(share.rglob("*.tex.j2"))
    for path in templates[0::2] if first else templates[1::2]:
        parts.append(path.read_text(encoding="utf-8"))
    return "\n".join(parts)


def _latex_tables(seed: int) -> str:
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(rng.normal(size=(25, 4)).round(3), columns=["mean", "std", "t", "p"])
    return frame.style.to_latex() + "\n" + frame.to_latex() if seed % 2 else frame.to_latex()


def latex() -> Corpus:
    """numpy's math docstrings, nbconvert's LaTeX templates, tables, generated formulas."""

    def half(first: bool, seed: int) -> list[str]:
        text = "\n".join([_latex_sources(first), _latex_tables(seed), _formulas(seed)])
        chunks = _chunks(text, limit=10**6, size=SAMPLE_CHARS // 2)
        return random.Random(seed).sample(chunks, min(len(chunks), SAMPLES_PER_HALF))

    return Corpus(half(True, 21), half(False, 22))


def _binaries(first: bool) -> list[bytes]:
    blobs: list[bytes] = []
    folder = _package_dir("jupyterlab") or _STDLIB
    images = sorted(
        p for p in folder.rglob("*") if p.suffix in (".png", ".woff2", ".woff", ".ico", ".gif")
    )
    for path in images[0::2] if first else images[1::2]:
        blobs.append(path.read_bytes()[:SAMPLE_CHARS])
    rng = random.Random(31 if first else 32)
    for _ in range(SAMPLES_PER_HALF):
        blobs.append(rng.randbytes(SAMPLE_CHARS))
        text = " ".join(rng.choice(_NAMES) for _ in range(4000)).encode()
        blobs.append(zlib.compress(text))
    return [b for b in blobs if len(b) > 200]


def base64_text() -> Corpus:
    """Images, fonts, compressed and random bytes as base64: bare, data URLs, MIME lines."""

    def half(first: bool) -> list[str]:
        texts = []
        for index, blob in enumerate(_binaries(first)[:SAMPLES_PER_HALF]):
            encoded = base64.b64encode(blob).decode()
            if index % 3 == 1:
                encoded = "data:image/png;base64," + encoded
            elif index % 3 == 2:
                encoded = "\n".join(encoded[i : i + 76] for i in range(0, len(encoded), 76))
            texts.append(encoded[:SAMPLE_CHARS])
        return texts

    return Corpus(half(True), half(False))


# ---- scripts beyond Latin ---------------------------------------------------------------------


def _codec_texts() -> list[str]:
    folder = _STDLIB / "test" / "cjkencodings"
    seen, texts = set(), []
    for path in sorted(folder.glob("*-utf8.txt")) if folder.exists() else []:
        text = path.read_text(encoding="utf-8")
        key = text[:60]
        if key not in seen and len(text) > 300:
            seen.add(key)
            texts.append(text)
    return texts


def _cldr_words(locale: str, first: bool) -> list[str]:
    """Words in `locale` from babel's CLDR data (names of countries, languages, units...)."""
    try:
        from babel import Locale
    except ImportError:
        return []
    data = Locale.parse(locale)
    tables: list[Any] = (
        [data.territories, data.languages, data.months["format"]["wide"]]
        if first
        else [data.currencies, data.scripts, data.days["format"]["wide"], data.time_zones]
    )
    words: list[str] = []
    for table in tables:
        for value in table.values():
            if isinstance(value, str):
                words.append(value)
            elif isinstance(value, dict):
                words.extend(v for v in value.values() if isinstance(v, str))
    return [w for w in words if w]


_JOINERS = {
    "zh": (["的", "和", "在", "是", "了", "与", "对于", "以及"], "，", "。", ""),
    "ja": (["の", "は", "が", "を", "に", "と", "では", "から"], "、", "。", ""),
    "ko": (["은", "는", "이", "가", "을", "를", "의", "에서"], ", ", ". ", " "),
}


def _cjk_sentences(seed: int, first: bool) -> str:
    rng = random.Random(seed)
    out = []
    for locale, (particles, comma, stop, space) in _JOINERS.items():
        words = _cldr_words(locale, first)
        if not words:
            continue
        for _ in range(220):
            clause = [
                rng.choice(words) + space + rng.choice(particles) for _ in range(rng.randint(2, 5))
            ]
            out.append(space.join(clause[:2]) + comma + space.join(clause[2:]) + stop)
            if rng.random() < 0.2:
                out.append("\n")
    return space.join(out)


_TEXTS = Path(__file__).parent / "texts"


def _written(half: str) -> dict[str, list[str]]:
    """The paragraphs of bench/texts/cjk_<half>.txt by section ("zh", "ja-mixed", ...):
    prose written for this corpus, on a notebook's topics (data, errors, models) and
    others; half "a" trains, half "b" is held out and was written apart from it."""
    sections: dict[str, list[str]] = {}
    text = (_TEXTS / f"cjk_{half}.txt").read_text(encoding="utf-8")
    for section in re.split(r"^## ", text, flags=re.MULTILINE)[1:]:
        name, _, body = section.partition("\n")
        sections[name.strip()] = [p.strip() for p in body.split("\n\n") if p.strip()]
    return sections


def _prose(half: str, suffix: str = "") -> list[str]:
    """The written paragraphs of one half, each language's joined two by two (a sample of
    a few hundred characters, as a chat reply is)."""
    out = []
    for language in ("zh", "ja", "ko"):
        paragraphs = _written(half).get(language + suffix, [])
        out += ["\n\n".join(paragraphs[i : i + 2]) for i in range(0, len(paragraphs), 2)]
    return out


def cjk_text() -> Corpus:
    """Chinese, Japanese and Korean prose: written for this corpus, and the codec test
    files'."""
    texts = _codec_texts()
    first = [t[: len(t) // 2] for t in texts] + _prose("a")
    second = [t[len(t) // 2 :] for t in texts] + _prose("b")
    return Corpus(first, second)


def cjk_names() -> Corpus:
    """CLDR's names of places, languages and currencies strung into sentences with random
    particles: no one writes this, but a table of such names costs o200k more per
    character than prose (rare characters, few merges). Reported beside the kinds, not fitted."""
    return Corpus(_chunks(_cjk_sentences(41, True), size=1_500),
                  _chunks(_cjk_sentences(42, False), size=1_500))


_CODE_WORDS = [
    "df",
    "sales_df",
    "revenue",
    "groupby",
    "merge",
    "fillna",
    "plot",
    "csv",
    "API",
    "pandas",
    "numpy",
    "model.fit()",
    "loss",
    "GPU",
    "SQL",
    "JSON",
    "v2.1",
    "README",
]


def _mixed(seed: int, first: bool) -> list[str]:
    """Written prose with identifiers, numbers, units and inline code put between its
    clauses, in samples of 2,000 characters."""
    rng = random.Random(seed)
    half = "a" if first else "b"
    base = "\n\n".join("\n\n".join(_written(half).get(language, []))
                       for language in ("zh", "ja", "ko"))
    pieces = re.split(r"(?<=[。，、.,])", base)
    out = []
    for piece in pieces:
        out.append(piece)
        roll = rng.random()
        if roll < 0.35:
            out.append(f" {rng.choice(_CODE_WORDS)} ")
        elif roll < 0.5:
            out.append(
                f"{rng.randint(1, 2026)}{rng.choice(['%', '年', '个', 'ms', ' rows', '件'])}"
            )
        elif roll < 0.55:
            out.append(f"`{rng.choice(_CODE_WORDS)}({rng.choice(_NAMES)}={rng.random():.2f})`")
    return _chunks("".join(out), size=2_000)


def mixed_cjk_latin() -> Corpus:
    """CJK prose with identifiers, numbers, units and inline code: written so (the
    explanation of a line of pandas in Chinese) and with them put between its clauses."""
    return Corpus(_prose("a", "-mixed") + _mixed(51, True),
                  _prose("b", "-mixed") + _mixed(52, False))


_EMOJI_1 = [
    "😀",
    "😂",
    "🙂",
    "😍",
    "🤔",
    "😭",
    "👍",
    "🙏",
    "🔥",
    "🎉",
    "❤️",
    "✅",
    "🚀",
    "📈",
    "💡",
    "😅",
    "👀",
    "🐍",
    "📊",
    "⚠️",
    "👍🏽",
    "🇫🇷",
    "👩‍💻",
    "1️⃣",
]
_EMOJI_2 = [
    "😃",
    "🤣",
    "😉",
    "🥰",
    "🧐",
    "😢",
    "👏",
    "💪",
    "✨",
    "🥳",
    "💙",
    "❌",
    "🛠️",
    "📉",
    "🧠",
    "😬",
    "🙈",
    "🦀",
    "🗂️",
    "⛔",
    "👋🏻",
    "🇯🇵",
    "👨‍👩‍👧",
    "🔢",
]
_CHAT = [
    "the model finished training",
    "look at this chart",
    "great result",
    "it failed again",
    "merged the branch",
    "coffee first",
    "shipping it today",
    "nice catch",
    "thanks a lot",
    "we beat the baseline",
    "data looks weird",
    "see you tomorrow",
]


def _emoji_messages(seed: int, emoji: list[str]) -> list[str]:
    rng = random.Random(seed)
    samples = []
    for index in range(SAMPLES_PER_HALF):
        density = [0.2, 0.5, 0.9][index % 3]
        parts: list[str] = []
        while sum(map(len, parts)) < SAMPLE_CHARS // 2:
            line = rng.choice(_CHAT)
            if rng.random() < density:
                line = f"{line} {''.join(rng.choice(emoji) for _ in range(rng.randint(1, 4)))}"
            if rng.random() < density / 2:
                line = f"{rng.choice(emoji)} {line}"
            parts.append(line)
        samples.append("\n".join(parts))
    return samples


def emoji_text() -> Corpus:
    """Chat lines with emoji: ZWJ sequences, skin tones, flags, keycaps (different sets)."""
    return Corpus(_emoji_messages(61, _EMOJI_1), _emoji_messages(62, _EMOJI_2))


CORPORA: dict[str, Callable[[], Corpus]] = {
    "english prose": english_prose,
    "python code": python_code,
    "json tool output": json_tool_output,
    "dataframe printout": dataframe_printout,
    "describe / wide floats": describe_and_wide_floats,
    "log file": log_file,
    "traceback": traceback_text,
    "minified html/js": minified_html_js,
    "latex": latex,
    "base64": base64_text,
    "cjk text": cjk_text,
    "mixed cjk/latin": mixed_cjk_latin,
    "emoji": emoji_text,
}


def tokenizer_files() -> Path:
    """The folder of tiktoken files litellm ships (so tiktoken works offline)."""
    spec = importlib.util.find_spec("litellm")
    assert spec and spec.origin, "litellm is required for the offline tokenizer files"
    return Path(spec.origin).parent / "litellm_core_utils" / "tokenizers"


def o200k():  # type: ignore[no-untyped-def]
    """tiktoken's o200k_base, loaded offline from the files litellm ships."""
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(tokenizer_files()))
    import tiktoken

    return tiktoken.get_encoding("o200k_base")
