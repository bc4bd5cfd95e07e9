"""The agent's sentences built from a template (`_texts`) read as English whatever fills them:
the article before a role or a number agrees with it ("an assistant message", never "a
assistant message"), and a blocked chat says why compaction did not help."""

from __future__ import annotations

import re

import nbagent
from nbagent.testing import ScriptedModel, reply

VOWEL_SLIP = re.compile(r"\ba (?=[aeiou]|8|11\b|18\b)", re.IGNORECASE)


def test_a_blocked_chat_names_its_largest_part_with_the_right_article() -> None:
    model = ScriptedModel([reply("alpha beta gamma " * 600), reply("never sent")])
    agent = nbagent.new_session(model=model, builtin_tools=False, settings=nbagent.Settings(
        max_context_tokens=2_048, disable_compact=True))
    agent.chat("hi")
    stop = agent.chat("again").stop_message or ""
    assert "The largest part is an assistant message (message 2," in stop
    assert "of the 1,843 tokens this model can take (its effective window)" in stop  # named
    assert nbagent.thresholds("m", settings=agent.settings()).effective_window == 1_843
    assert not VOWEL_SLIP.search(stop), stop
    assert len(model.requests) == 1  # the second chat was never sent



def test_a_blocked_chat_says_why_compaction_did_not_help() -> None:
    """With automatic compaction off, the message says so instead of claiming it failed;
    with it on, a latest ask too large to fit beside the system prompt and the tools (it is
    always kept whole, everything before it folded) is what the message names."""
    stops = {}
    for off, ask in ((True, "again"), (False, "again and " * 1_200)):
        model = ScriptedModel([reply("alpha beta gamma " * 600), reply("never sent")])
        agent = nbagent.new_session(model=model, builtin_tools=False, settings=nbagent.Settings(
            max_context_tokens=2_048, disable_compact=off))
        agent.chat("hi")
        result = agent.chat(ask)
        assert result.stop_reason == "blocked" and result.text == ""  # never sent
        stops[off] = result.stop_message or ""
    assert "automatic compaction is off (NBAGENT_DISABLE_COMPACT)" in stops[True]
    assert "could not shrink" not in stops[True]
    assert stops[False].startswith("Not sent: the system prompt, the tools and this message")
