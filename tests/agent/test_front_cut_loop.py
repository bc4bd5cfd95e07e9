"""A reply to a prompt the server cut at the front, on the loop's path with the scripted
model: noticed from the usage, never kept unsaid — asked again once after compacting,
marked when the second answer was cut too; a usage near our count is no cut."""

from __future__ import annotations

import pytest

from nbagent import History, LiteLLMModel, Usage
from nbagent.agent import may_cut_silently
from nbagent.engine import TRUNCATED_SHARE, TokenTracker, Truncation
from nbagent.testing import ScriptedModel, reply
from tests.helpers import make_agent

LONG = [{"role": "user", "content": f"question {t} about sales_df.region " * 30}
        for t in range(6)]


def history() -> History:
    h = History([{"role": "system", "content": "You help."}])
    for message in LONG:
        h.append(message)
        h.append({"role": "assistant", "content": "noted " * 40})
    return h


def test_a_usage_well_under_our_count_is_a_cut_and_is_not_learnt_from() -> None:
    tracker, h = TokenTracker(), history()
    sent = tracker.count(h, model="m")
    cut = tracker.record_usage(h, Usage(input_tokens=int(sent * 0.3)), model="m")
    assert isinstance(cut, Truncation) and cut.read == int(sent * 0.3)
    assert abs(cut.sent - sent) <= 2 and tracker.truncations == 1
    assert tracker.last_usage is None and tracker.ratio("m") == 1.0  # not believed
    near = tracker.record_usage(h, Usage(input_tokens=int(sent * (TRUNCATED_SHARE + 0.1))),
                                model="m")
    assert near is None and tracker.last_usage is not None  # another tokenizer, not a cut


def test_the_window_bound_halves_what_ollama_keeps_then_trusts_only_what_was_read() -> None:
    cut = Truncation(sent=9_000, read=2_050)
    assert cut.window_bound(None, again=False) == 4_100  # Ollama kept num_ctx / 2
    assert cut.window_bound(None, again=True) == 2_050
    assert cut.window_bound(3_000, again=False) == 3_000  # never above a learned window
    assert Truncation(sent=3_000, read=1_800).window_bound(None, again=False) == 2_999


def test_a_reply_to_a_cut_prompt_is_asked_again_then_marked_if_cut_again() -> None:
    agent, _ = make_agent(ScriptedModel([
        reply("built on half a prompt", usage=Usage(input_tokens=700)),
        reply("built on half again", usage=Usage(input_tokens=60)),
        reply("a whole answer"),
    ]), window=32_000, builtin_tools=False)
    for message in LONG:
        agent.history.extend([message, {"role": "assistant", "content": "noted " * 40}])
    result = agent.chat("what now?")
    assert result.text == "built on half again"  # the second cut one is kept, but marked
    notice = str(result.stop_message)
    assert "OLLAMA_CONTEXT_LENGTH" in notice and "again" in notice.split("\n\n")[-1]
    assert "without the start of the conversation" in notice
    assert "built on half a prompt" not in str(agent.history.messages)
    assert agent.window().raw_window == 60  # the second cut trusts only what was read
    assert agent.window().source.startswith("learned")


def test_a_provider_that_refuses_long_prompts_is_never_taken_for_a_cut() -> None:
    """A usage far under our count at a provider litellm knows is our estimate's error:
    such providers refuse an over-long prompt, so the reply stands and is not asked again."""
    tracker, h = TokenTracker(), history()
    sent = tracker.count(h, model="m")
    assert tracker.record_usage(h, Usage(input_tokens=int(sent * 0.3)), model="m",
                                may_cut=False) is None
    assert tracker.truncations == 0


@pytest.mark.parametrize(("name", "cuts"), [
    ("anthropic/claude-sonnet-4-5", False), ("gpt-4o", False), ("ollama_chat/llama3.1", True),
    ("hosted_vllm/qwen", True), ("openai/my-own-finetune", True),
], ids=["anthropic", "openai", "ollama", "vllm", "own-server"])
def test_which_servers_may_cut_silently(name: str, cuts: bool) -> None:
    assert may_cut_silently(LiteLLMModel(name)) is cuts
