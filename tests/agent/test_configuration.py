"""An agent's settings (`_configuration`): overrides change this agent only, by field name or
alias; an unknown name or a bad value raises and changes nothing; `describe` lists only what
differs from the defaults."""

from __future__ import annotations

import warnings

import pytest

from nbagent import Agent, ConfigWarning
from nbagent.testing import ScriptedModel


def test_configure_changes_this_agent_only_and_refuses_bad_input() -> None:
    agent = Agent(model=ScriptedModel(), archive=False, namespace={})
    other = Agent(model=ScriptedModel(), archive=False, namespace={})
    agent.configure(window=8_192, enable_python=True)
    assert agent.context_state().thresholds.window.raw_window == 8_192
    assert "python" in agent.tools and "python" not in other.tools
    assert other.context_state().thresholds.window.raw_window != 8_192
    with pytest.raises(ValueError, match="unknown setting"):
        agent.configure(windw=1)
    with pytest.raises(ValueError):
        agent.configure(window=-5)
    assert agent.settings().max_context_tokens == 8_192
    assert "NBAGENT_MAX_CONTEXT_TOKENS = 8192" in agent.describe()
    assert "NBAGENT_DISABLE_COMPACT" not in agent.describe()  # only what differs


@pytest.mark.parametrize(("change", "said"), [
    ({"run_code": "maybe"}, "run_code='maybe' is not accepted: expected 'ask', 'auto' or 'off'"),
    ({"window": "-3"}, "window='-3' is not accepted: expected a whole number above 0"),
    ({"keep_recent_turns": "some"},
     "keep_recent_turns='some' is not accepted: expected a whole number of 0 or more"),
    ({"compact_target_ratio": 2}, "compact_target_ratio=2 is not accepted: expected a number "
     "above 0 and at most 1"),
    ({"see_cells": "perhaps"}, "see_cells='perhaps' is not accepted: expected true or false"),
], ids=["choice", "alias", "count", "ratio", "flag"])
def test_a_refused_value_names_the_setting_the_value_and_what_is_accepted(
        change: dict[str, object], said: str) -> None:
    agent = Agent(model=ScriptedModel(), archive=False, namespace={})
    with pytest.raises(ValueError) as refused:
        agent.configure(**change)
    assert str(refused.value) == said  # one line, no pydantic link
    assert agent.settings() == Agent(model=ScriptedModel(), archive=False,
                                     namespace={}).settings()  # nothing changed


def test_a_bad_environment_value_warns_once_however_many_places_read_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NBAGENT_SNIP_MIN_CHARS", "plenty")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")  # Python's own once-per-line filter hides nothing
        agent = Agent(model=ScriptedModel(default="ok"), archive=False, namespace={})
        agent.chat("hi")  # the window, the tools, the controller... each read the settings
        agent.context_state()
        monkeypatch.setenv("NBAGENT_SNIP_MIN_CHARS", "lots")  # another value: said again
        agent.chat("again")
        monkeypatch.setenv("NBAGENT_SNIP_MIN_CHARS", "plenty")  # said already
        agent.chat("and again")
    said = [str(w.message) for w in caught if issubclass(w.category, ConfigWarning)]
    assert said == [
        "ignoring NBAGENT_SNIP_MIN_CHARS='plenty': expected a whole number of 0 or more; "
        "the default (200) is used",
        "ignoring NBAGENT_SNIP_MIN_CHARS='lots': expected a whole number of 0 or more; "
        "the default (200) is used"]
    assert agent.settings().snip_min_chars == 200
