"""The secrets corpus the redaction tests read (`tests/data/secrets.json`: examples of every
row of the `SHAPES` table, each with its secret span), shared by test_shapes and test_redact."""

from __future__ import annotations

import json
from pathlib import Path

DATA = Path(__file__).parents[2] / "data"
SECRETS: list[dict[str, str]] = json.loads((DATA / "secrets.json").read_text())
NO_ENV: dict[str, str] = {}


def secret_id(entry: dict[str, str]) -> str:
    return f"{entry['format']}: {entry['text'][:30]}"
