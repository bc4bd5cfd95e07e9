"""`ModelQuestions` and `Standalone`: a controller asks one object about its model."""

from __future__ import annotations

import pytest

from nbagent import CompactionController, History, Settings, WindowInfo
from nbagent.testing import ScriptedSummarizer, Standalone


def test_standalone_answers_resolve_a_model_name_and_read_fixed_settings() -> None:
    answers = Standalone(window_spec="local/test", fixed_settings=Settings(max_context_tokens=8_192))
    assert answers.window().raw_window == 8_192 and answers.window().model == "local/test"
    assert answers.summarizer() == (None, None)
    messages = [{"role": "system", "content": "s"}]
    assert answers.refresh(messages) is messages


def test_without_fixed_settings_the_environment_is_read_at_each_use(
        monkeypatch: pytest.MonkeyPatch) -> None:
    answers = Standalone(window_spec="local/test")
    monkeypatch.setenv("NBAGENT_MAX_CONTEXT_TOKENS", "16384")
    assert answers.window().raw_window == 16_384
    monkeypatch.setenv("NBAGENT_MAX_CONTEXT_TOKENS", "32768")
    assert answers.window().raw_window == 32_768


def test_a_controller_takes_one_object_or_fixed_answers_not_both() -> None:
    summarize = ScriptedSummarizer()
    with pytest.raises(ValueError, match="not both"):
        CompactionController(Standalone(), summarize=summarize)
    ctl = CompactionController(summarize=summarize, window=WindowInfo("m", 9_000, "table",
                                                                      None, None))
    assert ctl.summarize is summarize and ctl.window().raw_window == 9_000
    assert ctl.count(History([{"role": "system", "content": "s"}])) > 0
