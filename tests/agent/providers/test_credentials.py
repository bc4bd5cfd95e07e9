"""Which variable a missing or rejected key is (`providers/_credentials`): the hint names
the variable to set for the model's provider, says when a key that is set was rejected
(never showing it), and prefers the variable the provider's own error named."""

from __future__ import annotations

import pytest

from nbagent.agent.providers import auth_hint
from nbagent.testing import provider_error


@pytest.mark.parametrize(
    ("model", "variable"),
    [
        ("openai/gpt-4o", "OPENAI_API_KEY"),
        ("gpt-4o", "OPENAI_API_KEY"),
        ("anthropic/claude-sonnet-4-20250514", "ANTHROPIC_API_KEY"),
        ("groq/llama-3.3-70b-versatile", "GROQ_API_KEY"),
    ],
)
def test_the_auth_hint_names_the_variable_to_set(
    model: str, variable: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(variable, raising=False)
    hint = auth_hint(model, RuntimeError("Connection error."))
    assert variable in hint and "not set" in hint and model in hint


def test_the_auth_hint_says_a_set_key_was_rejected(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong")
    hint = auth_hint("openai/gpt-4o", provider_error(401, "Incorrect API key provided"))
    assert "OPENAI_API_KEY" in hint and "rejected" in hint and "sk-wrong" not in hint


def test_the_auth_hint_prefers_the_variable_the_provider_named(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    error = RuntimeError(
        "Missing credentials. Please set the `OPENAI_API_KEY` environment variable"
    )
    assert "OPENAI_API_KEY" in auth_hint("my-proxy/some-model", error)
