from __future__ import annotations

import io
from itertools import pairwise

import pytest

from nbagent.demo import main, run


def test_the_demo_crosses_every_level_in_order() -> None:
    out = io.StringIO()
    states = run(window=8_192, turns=12, out=out)
    levels = [s.level for s in states]
    assert levels[0] == "ok" and levels[-1] == "blocking"
    order = ["ok", "warning", "error", "compact", "blocking"]
    assert [order.index(level) for level in levels] == sorted(
        order.index(level) for level in levels
    )
    assert all(a.tokens < b.tokens for a, b in pairwise(states))
    assert "window 8,192 from env" in out.getvalue()


def test_bad_arguments_are_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["--window", "10"])
    assert caught.value.code == 2
    assert "--window must be at least 256" in capsys.readouterr().err
