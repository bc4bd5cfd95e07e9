"""Text corpora for the estimator benchmark, built on this machine from what any
Python install has (stdlib sources, its CJK codec test files) plus seeded
generated data (JSON tool output, a pandas DataFrame printout). Nothing is
downloaded; each corpus is cut into samples of a few KB, like tool outputs.
"""

from __future__ import annotations

import json
import random
import sysconfig
from pathlib import Path

_STDLIB = Path(sysconfig.get_paths()["stdlib"])
SAMPLE_CHARS = 4_000


def _chunks(text: str, limit: int = 40) -> list[str]:
    return [text[i : i + SAMPLE_CHARS] for i in range(0, len(text), SAMPLE_CHARS)][:limit]


def english_prose() -> list[str]:
    """Docstring and documentation prose from the stdlib (plain English sentences)."""
    import ast

    texts = []
    for name in (
        "argparse.py",
        "subprocess.py",
        "logging/__init__.py",
        "typing.py",
        "asyncio/tasks.py",
    ):
        tree = ast.parse((_STDLIB / name).read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            doc = (
                ast.get_docstring(node)
                if isinstance(
                    node, (ast.FunctionDef, ast.ClassDef, ast.Module, ast.AsyncFunctionDef)
                )
                else None
            )
            if doc and len(doc) > 200:
                texts.append(doc)
    return _chunks("\n\n".join(texts))


def python_code() -> list[str]:
    files = ("json/decoder.py", "textwrap.py", "dataclasses.py", "csv.py", "statistics.py")
    return _chunks("\n".join((_STDLIB / f).read_text(encoding="utf-8") for f in files))


def json_tool_output() -> list[str]:
    """What a tool returning records prints: indented JSON of mixed fields."""
    rng = random.Random(7)
    words = ["alpha", "beta", "sensor", "north", "revenue", "cohort", "pending", "ok", "error"]
    records = [
        {
            "id": f"rec-{i:05d}",
            "name": f"{rng.choice(words)}_{rng.choice(words)}",
            "value": round(rng.uniform(-1000, 1000), 3),
            "count": rng.randint(0, 10_000),
            "tags": rng.sample(words, 3),
            "active": rng.random() > 0.5,
            "updated": f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T12:00:00Z",
        }
        for i in range(300)
    ]
    return _chunks(json.dumps(records, indent=2))


def cjk_text() -> list[str]:
    folder = _STDLIB / "test" / "cjkencodings"
    names = (
        "gb2312-utf8.txt",
        "big5-utf8.txt",
        "euc_jp-utf8.txt",
        "euc_kr-utf8.txt",
        "gb18030-utf8.txt",
        "shift_jis-utf8.txt",
    )
    parts = [(folder / n).read_text(encoding="utf-8") for n in names if (folder / n).exists()]
    return [p for p in parts if p.strip()]


def dataframe_printout() -> list[str]:
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(3)
    frame = pd.DataFrame(
        rng.normal(size=(400, 6)) * [1, 10, 100, 0.01, 1000, 5],
        columns=["price", "volume", "temp_c", "rate", "revenue", "score"],
    )
    frame["count"] = rng.integers(0, 100_000, size=len(frame))
    with pd.option_context("display.max_rows", 1_000, "display.width", 120):
        text = frame.to_string() + "\n\n" + frame.describe().to_string()
    return _chunks(text)


CORPORA = {
    "english prose": english_prose,
    "python code": python_code,
    "json tool output": json_tool_output,
    "cjk text": cjk_text,
    "dataframe printout": dataframe_printout,
}


def o200k():  # type: ignore[no-untyped-def]
    """tiktoken's o200k_base, loaded offline from the files litellm ships."""
    import importlib.util
    import os

    spec = importlib.util.find_spec("litellm")
    assert spec and spec.origin, "litellm is required for the offline tokenizer files"
    folder = Path(spec.origin).parent / "litellm_core_utils" / "tokenizers"
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(folder))
    import tiktoken

    return tiktoken.get_encoding("o200k_base")
