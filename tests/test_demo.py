from __future__ import annotations

import io

import pytest

from nbagent.demo import main, run


def test_the_demo_compacts_automatically_then_on_request() -> None:
    out = io.StringIO()
    decisions = run(window=8_192, turns=16, out=out)
    automatic = [d for d in decisions if d.trigger == "auto"]
    assert len(automatic) >= 2 and all(d.action == "compacted" for d in decisions)
    assert all(d.tokens_after < d.threshold <= d.tokens_before for d in automatic)
    manual = decisions[-1]
    assert manual.trigger == "manual" and manual.focus == "keep the exact column names"
    text = out.getvalue()
    assert "window 8,192 from env" in text and "/compact keep the exact column names" in text
    assert "· compact " in text  # the meter level reached the trigger before compacting


def test_bad_arguments_are_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["--window", "10"])
    assert caught.value.code == 2
    assert "--window must be at least 256" in capsys.readouterr().err
