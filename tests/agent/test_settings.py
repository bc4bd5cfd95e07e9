"""The one `Settings` users see (`_settings`): the agent's fields beside the engine's, each
read from its `NBAGENT_*` variable, validated like the engine's (a value a field refuses, or a
name no field has, is an error), and whether the run_code tool is offered. That every field
is read somewhere is tests/test_settings_read.py's; the engine's part, tests/engine/'s."""

from __future__ import annotations

import pydantic
import pytest

from nbagent import Settings


def test_the_agents_fields_are_read_from_their_variables() -> None:
    settings = Settings.from_env({
        "NBAGENT_MODEL": "openai/gpt-4o", "NBAGENT_RUN_CODE": "off",
        "NBAGENT_LOCAL_N_CTX": "4096", "NBAGENT_NOTEBOOK_CONTEXT": "false",
        "NBAGENT_MAX_CONTEXT_TOKENS": "8192"})
    assert (settings.model, settings.run_code, settings.local_n_ctx,
            settings.notebook_context, settings.max_context_tokens) == (
        "openai/gpt-4o", "off", 4096, False, 8192)
    defaults = Settings.from_env({})
    assert (defaults.model, defaults.run_code, defaults.local_n_ctx) == (None, "ask", 8192)


def test_run_code_is_offered_unless_it_is_off() -> None:
    assert [Settings(run_code=mode).runs_code for mode in ("ask", "auto", "off")] == [
        True, True, False]


@pytest.mark.parametrize("bad", [{"run_code": "sometimes"}, {"local_n_ctx": 0},
                                 {"max_chat_seconds": -1.0}, {"windw": 8192}],
                         ids=["not-a-choice", "not-positive", "not-above-zero", "no-such-field"])
def test_a_value_a_field_refuses_is_an_error(bad: dict[str, object]) -> None:
    with pytest.raises(pydantic.ValidationError):
        Settings(**bad)
