"""An agent's settings (`_configuration`): overrides change this agent only, by field name or
alias; an unknown name or a bad value raises and changes nothing; `describe` lists only what
differs from the defaults."""

from __future__ import annotations

import pytest

from nbagent import Agent
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
