"""A reply to a prompt the server did not read whole, on the loop's path with the scripted
model: a cut is noticed from the usage — read well under what was sent, or no more than the
request before though more was sent — and never calibrates our count; the window learned is
what the server showed it holds; a reading that contradicts what the server read before, or
a window too small for the system prompt, the tools and the latest message, is not learned:
the session says what the server reported and keeps working."""

from __future__ import annotations

import pytest

from nbagent import History, LiteLLMModel, Usage, tool
from nbagent.agent import may_cut_silently
from nbagent.engine import TRUNCATED_SHARE, TokenTracker, Truncation
from nbagent.testing import ScriptedModel, reply
from tests.helpers import add, make_agent

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


def test_a_server_that_cuts_to_fit_is_caught_by_its_plateau_and_teaches_nothing() -> None:
    """A cut to fit reads its context and no more however much is appended: the second
    such reading is a cut, and what the first taught the ratio is taken back."""
    tracker, h = TokenTracker(), history()
    whole = round(0.97 * tracker.count(h, model="m"))
    assert tracker.record_usage(h, Usage(input_tokens=whole), model="m") is None
    learnt = tracker.ratio("m")
    h.append({"role": "user", "content": "and the revenue? " * 60})
    window = whole + (tracker.count(h, model="m") - whole) // 2  # it held half the new part
    assert tracker.record_usage(h, Usage(input_tokens=window), model="m") is None  # mildly
    assert tracker.ratio("m") < learnt  # cut and not caught: it taught a lower ratio...
    h.append({"role": "assistant", "content": "revenue is up " * 40})
    h.append({"role": "user", "content": "by region? " * 40})
    cut = tracker.record_usage(h, Usage(input_tokens=window), model="m")
    assert isinstance(cut, Truncation) and cut.how == "plateau"  # the second cut is caught
    assert tracker.ratio("m") == learnt  # ...and what the first taught is taken back
    assert cut.bound == window and cut.window_bound(None) == window  # what it showed it holds
    assert cut.sent > window and tracker.last_usage is None


def test_cut_readings_never_shrink_the_count() -> None:
    """Issue 42 measured the ratio falling from 0.97 to 0.43 on replies to cut prompts:
    readings at a plateau leave it where whole reads put it."""
    tracker, h = TokenTracker(), history()
    tracker.record_usage(h, Usage(input_tokens=round(0.97 * tracker.count(h, model="m"))),
                         model="m")
    learnt = tracker.ratio("m")
    read = tracker.last_usage or 0
    for turn in range(30):
        h.append({"role": "user", "content": f"turn {turn}: " + "more rows " * 80})
        tracker.record_usage(h, Usage(input_tokens=read + 5), model="m")
        h.append({"role": "assistant", "content": "seen " * 30})
    assert tracker.ratio("m") >= 0.98 * learnt  # 0.97 stays (or the estimator's 1.0)
    assert tracker.count(h, model="m") > 4 * read  # counted whole, not as what was read


def test_the_window_learned_is_what_the_server_showed_it_holds() -> None:
    cut = Truncation(sent=9_000, read=2_050)
    assert cut.window_bound(None) == 2_050  # never a count of ours (9,000 may have drifted)
    assert cut.window_bound(1_500) == 1_500  # never above a learned window
    # it read 3,000 whole before: that is a floor of its window, whatever this cut kept
    assert Truncation(sent=9_000, read=2_050, held=3_000).window_bound(None) == 3_000
    assert not Truncation(sent=9_000, read=2_050, held=3_000).contradicts
    # a cutting server keeps about half of what it holds at least: 300 after 3,000 is
    # a usage that counts part of the prompt (only the tokens not in its cache)
    assert Truncation(sent=3_400, read=300, held=3_000).contradicts


def test_a_cut_of_a_request_counted_under_what_the_server_holds_raises_the_ratio() -> None:
    tracker, h = TokenTracker(), history()
    sent = tracker.count(h, model="m")
    big = History([*h.messages, {"role": "user", "content": "rows " * (sent // 20)}])
    tracker.record_usage(big, Usage(input_tokens=tracker.count(big, model="m")), model="m")
    held = tracker.held("m")
    assert sent < held < 1.08 * sent
    cut = tracker.record_usage(h, Usage(input_tokens=int(sent * 0.49)), model="m")
    assert cut is not None and not cut.contradicts and cut.bound == held
    # the server read `held` at once yet cut this request: it was larger than we counted
    assert tracker.ratio("m") == pytest.approx(held / sent, rel=0.02)


def test_a_reply_to_a_cut_prompt_is_asked_again_once_after_compacting() -> None:
    agent, _ = make_agent(ScriptedModel([
        reply("built on half a prompt", usage=Usage(input_tokens=700)),
        reply("a whole answer", usage=Usage(input_tokens=400)),
    ]), window=32_000, builtin_tools=False)
    for message in LONG:
        agent.history.extend([message, {"role": "assistant", "content": "noted " * 40}])
    result = agent.chat("what now?")
    assert result.text == "a whole answer"
    notice = str(result.stop_message)
    assert "OLLAMA_CONTEXT_LENGTH=32000" in notice and "llama-server -c 32000" in notice
    assert "--max-model-len 32000" in notice  # the window it was told, on each runtime
    assert "built on half a prompt" not in str(agent.history.messages)
    assert agent.window().raw_window == 700  # the most the server read at once
    assert agent.window().source.startswith("learned")
    assert [d.action for d in result.decisions] == ["compacted"]


def test_a_reading_that_contradicts_the_server_is_not_learned_and_the_reply_stands() -> None:
    """100 read after 3,000 read at once: a cutting server keeps far more than that, so its
    usage counts only part of the prompt (Ollama's uncached tokens). Nothing is learned
    from its usage any more, and what was learned from it is taken back."""
    agent, _ = make_agent(ScriptedModel([
        reply("built on half a prompt", usage=Usage(input_tokens=3_000)),
        reply("second", usage=Usage(input_tokens=100)),
        reply("third", usage=Usage(input_tokens=120)),
    ]), window=32_000, builtin_tools=False)
    for message in LONG:
        agent.history.extend([{**message, "content": message["content"] * 4},
                              {"role": "assistant", "content": "noted " * 150}])
    first = agent.chat("what now?")
    assert first.text == "second"
    notice = str(first.stop_message)
    assert "reported reading 100 tokens" in notice and "read 3,000 at once before" in notice
    assert "agent.configure(max_context_tokens=N)" in notice and "taken back" in notice
    assert (agent.window().raw_window, agent.window().source) == (32_000, "env")
    again = agent.chat("and then?")  # said once; the reply stands; nothing is learned
    assert again.text == "third" and again.stop_message is None
    assert agent.window().raw_window == 32_000


def test_a_server_that_under_reports_from_the_first_request_never_blocks_the_session() -> None:
    """Issue 42: 200 of ~1,280 tokens read learned a 400-token window and every later chat
    ended blocked with the breaker open. A window that cannot hold the system prompt, the
    tools and the message is not believed; the session keeps its window and works on."""
    model = ScriptedModel(default=reply("fine", usage=Usage(input_tokens=200)))
    agent, _ = make_agent(model, window=32_000, tools=[tool(add)],
                          system="You are careful with data. " * 40)
    results = [agent.chat(f"question {t}: " + "look at sales_df.region " * 60)
               for t in range(8)]
    assert [r.stop_reason for r in results] == ["done"] * 8
    assert [r.text for r in results] == ["fine"] * 8
    notice = str(results[0].stop_message)
    assert "reported reading only 200" in notice and "cannot hold" in notice
    assert all(r.stop_message is None for r in results[1:])  # said once
    assert agent.window().raw_window == 32_000 and agent.window().source == "env"
    assert not agent.controller.breaker_open and len(model.requests) == 8


def test_a_provider_that_refuses_long_prompts_is_never_taken_for_a_cut() -> None:
    """A usage far under our count at a provider litellm knows is our estimate's error:
    such providers refuse an over-long prompt, so the reply stands and is not asked again."""
    tracker, h = TokenTracker(), history()
    sent = tracker.count(h, model="m")
    assert tracker.record_usage(h, Usage(input_tokens=int(sent * 0.3)), model="m",
                                may_cut=False) is None
    assert tracker.truncations == 0


@pytest.mark.parametrize(("name", "base", "cuts"), [
    ("anthropic/claude-sonnet-4-5", None, False), ("gpt-4o", None, False),
    ("ollama_chat/llama3.1", None, True), ("hosted_vllm/qwen", None, True),
    ("openai/my-own-finetune", None, True),
    ("openai/gpt-4o", "http://127.0.0.1:4000/v1", True),
    ("openai/gpt-4o", "https://api.openai.com/v1", False),
], ids=["anthropic", "openai", "ollama", "vllm", "own-server", "known-name-on-loopback",
        "known-name-at-provider"])
def test_which_servers_may_cut_silently(name: str, base: str | None, cuts: bool) -> None:
    assert may_cut_silently(LiteLLMModel(name, api_base=base)) is cuts


def test_another_model_starts_from_what_its_own_server_shows() -> None:
    """What was found out of one server — a window, a usage that counts part of a prompt —
    is not held against the next model (`use_model`)."""
    agent, _ = make_agent(ScriptedModel([
        reply("built on half a prompt", usage=Usage(input_tokens=3_000)),
        reply("second", usage=Usage(input_tokens=100)),
    ]), window=32_000, builtin_tools=False)
    for message in LONG:
        agent.history.extend([{**message, "content": message["content"] * 4},
                              {"role": "assistant", "content": "noted " * 150}])
    agent.chat("what now?")
    assert agent.session.usage_partial
    agent.history.extend([{**message, "content": message["content"] * 4} for message in LONG])
    cut = int(0.3 * agent.context_state().tokens)
    agent.use_model(ScriptedModel([reply("built on a cut prompt", usage=Usage(input_tokens=cut)),
                                   reply("whole")]))
    assert not agent.session.usage_partial and agent.session.tracker.held("scripted/model") == 0
    result = agent.chat("and with the new one?")
    assert "dropped the front" in str(result.stop_message)  # its cut is read again
    assert agent.window().source.startswith("learned") and result.text == "whole"
