"""The cache-replay bench stays runnable and honest (a short replay; figures are
the bench's job, so only the invariants are asserted here)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1] / "bench"))
import cache_replay  # noqa: E402


def test_the_scenario_matches_the_published_script() -> None:
    assert [cache_replay.tool_for(t)[0] for t in (0, 40, 41, 76, 77, 95, 96, 99)] == [
        "bash", "bash", "edit_file", "edit_file", "read_file", "read_file", "search", "search"]
    assert cache_replay.tool_for(3) == ("bash", 40 + 111)
    assert cache_replay.tool_for(177) == ("read_file", 500)
    call, result = cache_replay.turn_messages(7)
    assert call["content"] == "Turn 7: inspecting the workspace before the next edit."
    assert call["tool_calls"][0]["id"] == "tc-7"
    assert json.loads(call["tool_calls"][0]["function"]["arguments"]) == {"arg": "target-7"}
    assert result["content"].split("\n")[0] == "turn 7 bash line 0: " + "data " * 6


def test_a_short_replay_compacts_within_budget_and_keeps_the_asks() -> None:
    result = cache_replay.run(120)
    assert result.compactions >= 1 and result.max_request_tokens <= cache_replay.BUDGET
    assert result.first_request_kept and result.latest_ask_kept
    assert 0.9 < result.hit_rate < 1


def test_json_output_is_one_object(capsys) -> None:  # type: ignore[no-untyped-def]
    cache_replay.main(["--json", "--turns", "30"])
    payload = json.loads(capsys.readouterr().out)
    assert list(payload) == ["results"] and payload["results"][0]["turns"] == 30
