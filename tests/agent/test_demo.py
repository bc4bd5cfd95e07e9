"""The demo script's own logic, with the offline stand-in (the real run, against the
embedded model, is in test_local.py)."""

from __future__ import annotations

import io

import pytest

from nbagent.demo import FOCUS, main, run


def test_the_offline_demo_chats_and_compacts_on_request() -> None:
    out = io.StringIO()
    decisions = run(window=2048, offline=True, out=out)
    text = out.getvalue()
    assert "a stand-in model, window 2,048 tokens" in text
    assert text.count("\nyou: ") == 9 and "→ list_variables()" in text
    assert f"/compact {FOCUS}" in text and "compacted on request (" in text
    assert decisions[-1].trigger == "manual" and decisions[-1].focus == FOCUS
    assert "% context left until auto-compact (ok) · " in text and "window 2,048 (env)" in text
    assert "compaction compacted" not in text
    assert text.count("```") == 2 * text.count("agent: Here is what I found")  # replies whole


def test_bad_arguments_are_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["--window", "100"])
    assert caught.value.code == 2
    assert "--window must be at least 1024" in capsys.readouterr().err
