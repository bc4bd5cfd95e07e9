"""Fixtures of the tools' tests: `work`, a notebook's working directory with a folder
beside it that is not a root (test_files, test_confinement)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A notebook's working directory, with a folder beside it that is not a root."""
    folder = tmp_path / "work"
    folder.mkdir()
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "private.txt").write_text("not yours\n")
    monkeypatch.chdir(folder)
    return folder
