"""Which notebook a kernel runs and its key (`_notebook_link`): the path from the Jupyter
server, ipykernel or VS Code, and a key per notebook path that is a file name."""

from __future__ import annotations

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
