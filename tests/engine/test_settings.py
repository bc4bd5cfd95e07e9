from __future__ import annotations

import pytest

from nbagent import ConfigWarning, Settings


def test_defaults_on_a_clean_environment() -> None:
    settings = Settings.from_env({})
    assert settings == Settings()
    assert settings.disable_compact is False and settings.max_context_tokens is None


def test_values_are_read_from_nbagent_variables() -> None:
    settings = Settings.from_env(
        {"NBAGENT_MODEL": "gpt-4o", "NBAGENT_MAX_CONTEXT_TOKENS": " 8192 ", "OTHER": "x"}
    )
    assert settings.model == "gpt-4o" and settings.max_context_tokens == 8192


@pytest.mark.parametrize("value", ["1", "0", "false", "yes"])
def test_any_non_empty_value_disables_compaction(value: str) -> None:
    assert Settings.from_env({"NBAGENT_DISABLE_COMPACT": value}).disable_compact is True


@pytest.mark.parametrize("value", ["", "   "])
def test_an_empty_value_leaves_compaction_on(value: str) -> None:
    assert Settings.from_env({"NBAGENT_DISABLE_COMPACT": value}).disable_compact is False


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("NBAGENT_MAX_CONTEXT_TOKENS", "lots"),
        ("NBAGENT_MAX_CONTEXT_TOKENS", "-5"),
        ("NBAGENT_MAX_CONTEXT_TOKENS", "0"),
        ("NBAGENT_MODEL_LIMIT", "12.5"),
        ("NBAGENT_AUTO_COMPACT_WINDOW", "1e6"),
    ],
    ids=["word", "negative", "zero", "float", "exponent"],
)
def test_a_bad_value_warns_naming_it_and_falls_back_to_the_default(name: str, value: str) -> None:
    with pytest.warns(ConfigWarning, match=f"ignoring {name}='{value}'"):
        settings = Settings.from_env({name: value, "NBAGENT_MODEL": "gpt-4o"})
    assert settings.model == "gpt-4o"  # the good values survive
    assert getattr(settings, name.removeprefix("NBAGENT_").lower()) is None


def test_two_bad_values_are_both_reported() -> None:
    with pytest.warns(ConfigWarning) as caught:
        Settings.from_env({"NBAGENT_MAX_CONTEXT_TOKENS": "x", "NBAGENT_MODEL_LIMIT": "y"})
    assert {str(w.message).split("=")[0] for w in caught} == {
        "ignoring NBAGENT_MAX_CONTEXT_TOKENS",
        "ignoring NBAGENT_MODEL_LIMIT",
    }


def test_unknown_fields_are_rejected_in_code() -> None:
    with pytest.raises(ValueError, match="extra"):
        Settings(max_context=5)  # type: ignore[call-arg]


def test_overrides_win_over_the_environment() -> None:
    settings = Settings.from_env(
        {"NBAGENT_MAX_CONTEXT_TOKENS": "8192", "NBAGENT_MODEL": "gpt-4o"},
        overrides={"max_context_tokens": 4_096, "enable_python": True},
    )
    assert (settings.max_context_tokens, settings.model, settings.enable_python) == (
        4_096, "gpt-4o", True)


def test_the_environment_is_read_at_each_call(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Settings.from_env().max_context_tokens is None
    monkeypatch.setenv("NBAGENT_MAX_CONTEXT_TOKENS", "32000")
    assert Settings.from_env().max_context_tokens == 32_000
    assert Settings.from_env(overrides={"max_context_tokens": 1_000}).max_context_tokens == 1_000
