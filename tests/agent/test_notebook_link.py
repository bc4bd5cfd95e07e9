"""Which notebook a kernel runs and its key (`_notebook_link`): the path from the Jupyter
server, ipykernel or VS Code, and a key per notebook path that is a file name."""

from __future__ import annotations

from pathlib import Path

import pytest

from nbagent.agent import notebook_key, notebook_path


def test_the_notebook_path_comes_from_the_server_ipykernel_or_vs_code(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    assert notebook_path({}) is None
    assert notebook_path({"__session__": "/home/u/a.ipynb"}) == "/home/u/a.ipynb"
    assert notebook_path({"__vsc_ipynb_file__": "/w/b.ipynb"}) == "/w/b.ipynb"
    assert notebook_path({"__session__": "a console"}) is None
    monkeypatch.setenv("JPY_SESSION_NAME", "c.ipynb")
    assert notebook_path({"__session__": "/home/u/a.ipynb"}) == "c.ipynb"
    key = notebook_key("reports/Q4 sales (final).ipynb")
    assert key.startswith("Q4-sales-final-") and "/" not in key
    assert notebook_key("a/x.ipynb") != notebook_key("b/x.ipynb")


def test_a_relative_notebook_path_keys_the_same_after_the_notebook_changes_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before = notebook_key("reports/sales.ipynb")
    monkeypatch.chdir(tmp_path)  # the notebook's code moved the kernel elsewhere
    assert notebook_key("reports/sales.ipynb") == before
    assert notebook_key(str(tmp_path / "sales.ipynb")) != before  # absolute paths as they are
