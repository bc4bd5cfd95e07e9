"""What a delegated task's sub-agent is first told of its data
(`nbagent.agent.tools._data_items.briefing`): a variable's listing line, a readable file's
size, a folder's readable files (no dot-name, no link, nothing `read_file` refuses), a
refusal where `read_file` would refuse, anything else as named; bounded, never the data."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import pytest

from nbagent.agent.tools import MAX_FOLDER_FILES, MAX_ITEMS, briefing


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    raw = tmp_path / "raw"
    raw.mkdir()
    for n in range(3):
        (raw / f"part_{n}.csv").write_text("a,b\n" + "1,2\n" * (n + 1) * 1_000)
    (raw / ".secret").write_text("hidden")
    (raw / "id_rsa").write_text("-----BEGIN OPENSSH PRIVATE KEY-----")
    os.symlink("/etc/hostname", raw / "linked.csv")
    (tmp_path / "app.log").write_text("x" * 3_000_000)
    return tmp_path


def test_each_kind_of_item(folder: Path) -> None:
    frame = pd.DataFrame({"revenue": [1.0, 2.0], "region": ["n", "s"]})
    text = briefing(["sales", "app.log", "raw", "/etc/passwd", "db://orders/2026"],
                    {"sales": frame})
    lines = text.splitlines()
    assert lines[0].startswith("- variable sales: DataFrame") and "revenue" in lines[0]
    assert "- file `app.log` (2.9 MB; read_file pages it)" in lines
    assert "- folder `raw`: 3 readable file(s):" in lines
    assert "  - `raw/part_0.csv` (3.9 KB)" in lines
    assert ".secret" not in text and "id_rsa" not in text and "linked" not in text
    assert any(line.startswith("- `/etc/passwd`: Refused:") for line in lines)
    assert lines[-1].startswith("- `db://orders/2026` (not a variable or a readable file")
    assert "x" * 20 not in text  # the data is never read


def test_bounded_in_items_and_files(folder: Path) -> None:
    many = folder / "many"
    many.mkdir()
    for n in range(MAX_FOLDER_FILES + 7):
        (many / f"f{n:03}.txt").write_text("1")
    text = briefing(["many"] + [f"item{n}" for n in range(MAX_ITEMS + 5)], {})
    assert f"- folder `many`: {MAX_FOLDER_FILES + 7} readable file(s), the first " \
           f"{MAX_FOLDER_FILES}:" in text
    assert text.count("  - `many/") == MAX_FOLDER_FILES
    assert text.splitlines()[-1] == f"- `item{MAX_ITEMS + 4}`"  # named, not looked into
    assert briefing([], {}) == "" and briefing(["  "], {}) == ""


def test_secrets_in_a_variable_line_are_redacted(folder: Path) -> None:
    text = briefing(["token"], {"token": "sk-proj-" + "a1B2" * 12})
    assert "a1B2a1B2" not in text
