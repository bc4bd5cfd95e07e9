from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from nbagent import ConfigWarning, Settings, resolve_window
from nbagent.agent.models import model_info
from nbagent.engine import SMALL_MODELS, small_model_for, table_lookup

CLAUDE = "anthropic/claude-sonnet-4-20250514"


def no_litellm(model: str) -> Mapping[str, Any] | None:
    return None


def litellm_says(window: int, output: int) -> Any:
    return lambda model: {"max_input_tokens": window, "max_output_tokens": output}


def test_litellm_model_info_is_used_for_a_known_model() -> None:
    info = resolve_window(CLAUDE, model_info=model_info)  # litellm's real model info
    assert (info.raw_window, info.source, info.max_output) == (200_000, "litellm", 64_000)


def test_litellm_knows_small_local_windows_and_they_are_trusted() -> None:
    info = resolve_window("ollama/llama3.1", model_info=model_info)
    assert (info.raw_window, info.source) == (8_192, "litellm")


def test_env_override_wins_over_everything(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NBAGENT_MAX_CONTEXT_TOKENS", "4096")
    info = resolve_window(CLAUDE + "[1m]", model_info=litellm_says(999_999, 10))
    assert (info.raw_window, info.source) == (4_096, "env")


@pytest.mark.parametrize("suffix", ["[1m]", "[1M]", " [1m]"])
def test_the_1m_suffix_gives_a_million(suffix: str) -> None:
    info = resolve_window(CLAUDE + suffix, model_info=litellm_says(200_000, 64_000))
    assert (info.raw_window, info.source, info.max_output) == (1_000_000, "suffix", 64_000)


def test_the_suffix_only_counts_at_the_end() -> None:
    info = resolve_window("claude-[1m]-sonnet-4", model_info=no_litellm)
    assert info.source == "table"


def test_a_bad_env_value_is_ignored_with_a_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NBAGENT_MAX_CONTEXT_TOKENS", "huge")
    with pytest.warns(ConfigWarning, match="NBAGENT_MAX_CONTEXT_TOKENS='huge'"):
        info = resolve_window(CLAUDE, model_info=litellm_says(200_000, 64_000))
    assert info.source == "litellm"


def test_env_is_read_at_call_time(monkeypatch: pytest.MonkeyPatch) -> None:
    assert resolve_window("x", model_info=no_litellm).raw_window == 200_000
    monkeypatch.setenv("NBAGENT_MAX_CONTEXT_TOKENS", "32000")
    assert resolve_window("x", model_info=no_litellm).raw_window == 32_000


def test_model_limit_replaces_the_max_output(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NBAGENT_MODEL_LIMIT", "1000")
    info = resolve_window(CLAUDE, model_info=litellm_says(200_000, 64_000))
    assert (info.max_output, info.max_output_source) == (1_000, "env")


def test_unknown_models_fall_back_to_the_default() -> None:
    info = resolve_window("my-company/secret-model-v7", model_info=model_info)
    assert (info.raw_window, info.source, info.max_output) == (200_000, "default", None)


def test_the_engine_asks_no_model_info_unless_given_a_lookup() -> None:
    info = resolve_window(CLAUDE)  # litellm knows it, but the engine never asks litellm
    assert (info.raw_window, info.source, info.max_output_source) == (200_000, "table", "table")


def test_a_served_model_reports_its_real_window() -> None:
    info = resolve_window("local/test-served-model", model_info=litellm_says(999_999, 10),
                          reported=(2_048, 512))
    assert (info.raw_window, info.source) == (2_048, "server")
    assert (info.max_output, info.max_output_source) == (512, "server")


def test_a_model_that_knows_only_its_window_keeps_the_lookups_max_output() -> None:
    info = resolve_window(CLAUDE, model_info=litellm_says(200_000, 64_000),
                          reported=(100_000, None))
    assert (info.raw_window, info.source) == (100_000, "server")
    assert (info.max_output, info.max_output_source) == (64_000, "litellm")


def test_a_limit_learned_from_an_overflow_error_wins_over_what_the_model_reports() -> None:
    info = resolve_window(CLAUDE, model_info=litellm_says(200_000, 64_000),
                          reported=(150_000, None), learned=120_000)
    assert (info.raw_window, info.source, info.max_output) == (120_000, "learned", 64_000)


@pytest.mark.parametrize("learned", [None, 0, -5], ids=["none", "zero", "negative"])
def test_no_learned_limit_changes_nothing(learned: int | None) -> None:
    info = resolve_window(CLAUDE, model_info=no_litellm, learned=learned)
    assert info.source == "table"


def test_a_smaller_configured_window_wins_over_a_learned_limit(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NBAGENT_MAX_CONTEXT_TOKENS", "4096")
    info = resolve_window(CLAUDE, model_info=no_litellm, learned=90_000)
    assert (info.raw_window, info.source) == (4_096, "env")


@pytest.mark.parametrize(("configured", "model", "named"), [
    ("200000", CLAUDE, "NBAGENT_MAX_CONTEXT_TOKENS (200,000)"),
    ("90001", CLAUDE, "NBAGENT_MAX_CONTEXT_TOKENS (90,001)"),
    (None, CLAUDE + "[1m]", "the [1m] suffix (1,000,000)"),
], ids=["env", "env-just-above", "suffix"])
def test_a_limit_the_provider_stated_caps_a_larger_configured_window(
        monkeypatch: pytest.MonkeyPatch, configured: str | None, model: str,
        named: str) -> None:
    if configured is not None:
        monkeypatch.setenv("NBAGENT_MAX_CONTEXT_TOKENS", configured)
    info = resolve_window(model, model_info=no_litellm, learned=90_000)
    assert info.raw_window == 90_000 and info.kind == "learned"
    assert info.source == f"learned: the limit the server showed, below {named}"


def test_a_server_names_where_its_window_came_from_and_an_assumed_window_says_so() -> None:
    served = resolve_window("openai/qwen", model_info=litellm_says(131_072, 8_192),
                            reported=(8_192, None), reported_source="llama.cpp /props n_ctx")
    assert (served.raw_window, served.source, served.kind) == (
        8_192, "server: llama.cpp /props n_ctx", "server")
    # a local server that says nothing: the assumption, not litellm's trained length
    assumed = resolve_window("ollama/llama3.1", model_info=model_info,
                             assumed=(2_048, "llama-cpp-python's default n_ctx"))
    assert (assumed.raw_window, assumed.kind) == (2_048, "assumed")
    assert assumed.source == "assumed: llama-cpp-python's default n_ctx"
    learned = resolve_window("ollama/llama3.1", model_info=model_info, learned=1_024,
                             assumed=(2_048, "why"))
    assert (learned.raw_window, learned.source) == (1_024, "learned")


@pytest.mark.parametrize(
    ("model", "small"),
    [
        ("anthropic/claude-sonnet-4-20250514", "anthropic/claude-haiku-4-5"),
        ("claude-opus-4-1", "claude-haiku-4-5"),
        ("openai/gpt-4.1", "openai/gpt-4o-mini"),
        ("gpt-5", "gpt-4o-mini"),
        ("gemini/gemini-2.5-pro", "gemini/gemini-2.0-flash"),
        ("ollama/llama3.1", "ollama/llama3.1"),
    ],
    ids=lambda v: v,
)
def test_summaries_go_to_a_small_model_of_the_same_provider(model: str, small: str) -> None:
    assert small_model_for(model) == small


def test_every_small_model_is_its_own_small_model() -> None:
    assert all(small_model_for(small) == small for small in SMALL_MODELS.values())


@pytest.mark.parametrize(
    ("model", "key"),
    [
        ("gpt-4o-mini-2024-07-18", "gpt-4o-mini"),
        ("openai/gpt-4o", "gpt-4o"),
        ("gpt-4-0613", "gpt-4"),
        ("azure/gpt-4.1-nano", "gpt-4.1"),
        ("o1-mini", "o1-mini"),
        ("openrouter/openai/o1", "o1"),
        ("bedrock/anthropic.claude-3-5-sonnet-20240620-v1:0", "claude-3-5"),
        ("ollama/llama3.1:8b", "llama3.1"),
        ("groq/llama-3.3-70b-versatile", "llama-3.3"),
        ("together_ai/Qwen/Qwen2.5-72B-Instruct", "qwen2.5"),
        ("gemini/gemini-2.5-pro", "gemini-2.5"),
        ("deepseek/deepseek-reasoner", "deepseek-reasoner"),
        ("mistral/mistral-large-latest", "mistral-large"),
    ],
    ids=lambda v: v,
)
def test_table_takes_the_longest_matching_key(model: str, key: str) -> None:
    found = table_lookup(model)
    assert found is not None and found[0] == key


@pytest.mark.parametrize("model", ["gpt-4o1-preview", "pro1", "falcon-o1x", "foo-o3"], ids=str)
def test_short_keys_never_match_inside_another_name(model: str) -> None:
    found = table_lookup(model)
    assert found is None or found[0] not in ("o1", "o3")


def test_table_is_used_when_litellm_does_not_know_the_model() -> None:
    info = resolve_window("my-proxy/claude-opus-4-7-experimental", model_info=no_litellm)
    assert (info.raw_window, info.source, info.max_output_source) == (200_000, "table", "table")


def test_settings_can_be_passed_explicitly() -> None:
    info = resolve_window(
        CLAUDE, settings=Settings(max_context_tokens=9_000), model_info=no_litellm
    )
    assert (info.raw_window, info.source) == (9_000, "env")
