"""Prompt caching on the request path, without a network: which provider family gets which
markers (`providers/_caching`), where the notebook context goes and what the previous
request's breakpoint is (`_request`), and what a session was billed (`_billing`)."""

from __future__ import annotations

from typing import Any

import pytest

from nbagent import Billing, Settings, Usage
from nbagent.agent import CacheMemory, with_context
from nbagent.agent.providers import (
    CachePlan,
    apply_cache_plan,
    breakpoints,
    cache_family,
    minimum_cacheable,
)
from nbagent.testing import MEMORY_HEADER, ScriptedModel, calls, reply
from tests.helpers import add, make_agent


@pytest.mark.parametrize(("name", "provider", "family"), [
    ("anthropic/claude-sonnet-4-5", "anthropic", "marked"),
    ("claude-3-5-haiku-20241022", "anthropic", "marked"),
    ("bedrock/us.anthropic.claude-sonnet-4-5-20250929-v1:0", "bedrock", "marked"),
    ("bedrock/converse/anthropic.claude-3-7-sonnet-20250219-v1:0", "bedrock", "marked"),
    ("vertex_ai/claude-sonnet-4-5@20250929", "vertex_ai-anthropic_models", "marked"),
    ("vertex_ai/gemini-2.5-pro", "vertex_ai-language-models", "none"),
    ("gemini/gemini-2.5-flash", "gemini", "none"),
    ("openrouter/google/gemini-2.5-pro", "openrouter", "none"),
    ("openai/gpt-4o", "openai", "keyed"),
    ("gpt-4.1-mini", "openai", "keyed"),
    ("openai/my-local-llama", None, "automatic"),  # an OpenAI-compatible server of one's own
    ("deepseek/deepseek-chat", "deepseek", "automatic"),
    ("local/smollm2", None, "none"),
], ids=lambda v: str(v))
def test_each_provider_family_caches_its_own_way(name: str, provider: str | None,
                                                 family: str) -> None:
    assert cache_family(name, provider) == family


def test_the_minimum_cacheable_prefix_follows_the_model() -> None:
    assert minimum_cacheable("anthropic/claude-sonnet-4-5") == 1_024
    assert minimum_cacheable("claude-3-5-haiku-20241022") == 2_048
    assert minimum_cacheable("anthropic/claude-opus-4-1") == 1_024


def plan_for(stable: int, tokens_each: int = 600, **fields: Any) -> CachePlan:
    return CachePlan(stable=stable, prefix_tokens=[tokens_each * (i + 1) for i in range(stable)],
                     **fields)


def test_breakpoints_are_at_most_four_and_never_on_a_prefix_too_small_to_cache() -> None:
    assert breakpoints(plan_for(12, boundary=2, previous=8), 1_024) == [2, 8, 11]
    # index 0 (600 tokens) is under the minimum: no breakpoint is spent there
    assert 0 not in breakpoints(plan_for(12, boundary=2, previous=8), 1_024)
    assert breakpoints(plan_for(12, tokens_each=2_000, boundary=3, previous=8, preamble=2),
                       1_024) == [1, 3, 8, 11]
    assert breakpoints(plan_for(3, tokens_each=100), 1_024) == []


def message_list(count: int) -> list[dict[str, Any]]:
    roles = ["user", "assistant"]
    return [{"role": "system", "content": "s"}] + [
        {"role": roles[i % 2], "content": f"m{i}"} for i in range(count - 1)]


def test_anthropic_markers_go_on_copies_of_the_marked_messages() -> None:
    messages = message_list(4)
    sent, options = apply_cache_plan("anthropic/claude-sonnet-4-5", "anthropic", messages,
                                     plan_for(4, tokens_each=2_000))
    assert options == {} and "cache_control" not in str(messages)  # the originals untouched
    assert sent[0] == {**messages[0], "cache_control": {"type": "ephemeral"}}
    assert sent[-1] == {**messages[-1], "cache_control": {"type": "ephemeral"}}
    assert sent[1:3] == messages[1:3]


@pytest.mark.parametrize("name", ["gemini/gemini-2.5-flash", "vertex_ai/gemini-2.5-pro",
                                  "deepseek/deepseek-chat", "local/smollm2"])
def test_gemini_automatic_cachers_and_local_servers_are_sent_as_they_are(name: str) -> None:
    messages = message_list(5)
    sent, options = apply_cache_plan(name, None, messages, plan_for(5, key="nbagent-x"))
    assert sent is messages and options == {}


def test_user_messages_in_a_row_go_as_one_except_where_litellm_joins_marked_ones() -> None:
    from nbagent.engine.compaction import notebook_note

    note = notebook_note([], "x: int = 1")
    assert note is not None
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "why?"}, note]
    for name in ("openai/gpt-4o", "deepseek/deepseek-chat", "ollama/llama3"):
        sent, _ = apply_cache_plan(name, None, messages, plan_for(3, key="k"))
        assert sent == [messages[0], {"role": "user", "content": f"why?\n\n{note['content']}"}]
        assert apply_cache_plan(name, None, messages, None)[0] == sent  # caching off too
    marked, _ = apply_cache_plan("anthropic/claude-sonnet-4-5", "anthropic", messages,
                                 plan_for(3, tokens_each=2_000, previous=1))
    assert [m["content"] for m in marked] == [m["content"] for m in messages]
    assert all("cache_control" in m for m in marked)


def test_openai_gets_the_session_key_and_the_setting_turns_everything_off() -> None:
    messages = message_list(5)
    assert apply_cache_plan("openai/gpt-4o", "openai", messages,
                            plan_for(5, key="nbagent-abc"))[1] == {"prompt_cache_key": "nbagent-abc"}
    for name in ("openai/gpt-4o", "anthropic/claude-sonnet-4-5"):
        sent, options = apply_cache_plan(name, None, messages,
                                         plan_for(5, tokens_each=2_000, key="k", enabled=False))
        assert sent is messages and options == {}


def test_for_a_model_of_ones_own_the_context_joins_the_latest_plain_user_message() -> None:
    asked = [{"role": "system", "content": "s"}, {"role": "user", "content": "why?"}]
    assert with_context(asked, "x: int = 1")[-1]["content"] == "why?\n\n[x: int = 1]"
    assert asked[-1]["content"] == "why?"  # a copy
    answered = [*asked, {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "42"}]
    sent = with_context(answered, "x: int = 1")  # the tool result stays the tool's own
    assert sent[2:] == answered[2:] and sent[1]["content"] == "why?\n\n[x: int = 1]"
    memory = [*asked[:1], {"role": "user", "content": f"{MEMORY_HEADER}\n- notes"}]
    assert with_context(memory, "x") == memory  # a block nbagent wrote is not the user's
    assert with_context(asked, None) is asked


def test_a_model_of_ones_own_sees_the_context_on_the_users_message_and_tool_results_as_is(
        ) -> None:
    model = ScriptedModel([calls(("add", {"a": 1, "b": 2})), reply("3")])
    agent, _ = make_agent(model, tools=[add], namespace={"rows": 10})
    agent.chat("add things")
    first, second = model.requests
    assert first[-1]["content"].startswith("add things\n\n[") and "rows: int = 10" in str(
        first[-1]["content"])
    assert second[:len(first)] == first and second[-1]["content"] == "3"  # the tool's own
    assert all("rows: int" not in str(m.get("content")) for m in agent.history)


def test_only_models_that_send_through_litellm_take_a_cache_plan() -> None:
    from nbagent import LiteLLMModel
    from nbagent.agent.models import takes_cache_plan
    from nbagent.local import LocalModel

    assert takes_cache_plan(LiteLLMModel("anthropic/claude-sonnet-4-5"))
    assert not takes_cache_plan(ScriptedModel())
    assert LocalModel.complete is not LiteLLMModel.complete  # its own: sent as it is


def test_the_previous_breakpoint_is_the_newest_one_whose_prefix_still_holds() -> None:
    agent, _ = make_agent(ScriptedModel([calls(("add", {"a": 1, "b": 2})), reply("3"),
                                         reply("b")]), tools=[add])
    session = agent.session
    assert CacheMemory.plan(session, [], enabled=True).previous is None
    agent.chat("one")  # requests ended at the user's message (1), then the tool result (3)
    plan = CacheMemory.plan(session, [], enabled=True)
    assert plan.previous == 3 and plan.stable == 5 and plan.key == f"nbagent-{session.id}"
    messages = session.history.messages  # a compaction rewrites the tool result (3)
    session.rewrite([*messages[:3], {**messages[3], "content": "[cleared]"}, messages[4]])
    assert CacheMemory.plan(session, [], enabled=True).previous == 1  # still cached
    session.rewrite([messages[0], {"role": "user", "content": "one, rewritten"}])
    assert CacheMemory.plan(session, [], enabled=True).previous == 0  # the system prompt


def test_after_a_snip_the_request_reads_up_to_where_the_last_compaction_ended() -> None:
    """The boundary is how far compaction has rewritten (here the last cleared result);
    the next snip starts after it, so the request after it still has that prefix cached
    and marks it, where it used to fall back to the system prompt."""
    from nbagent.testing import snip_placeholder

    agent, _ = make_agent(ScriptedModel())
    session = agent.session

    def turn(n: int, result: str) -> list[dict[str, Any]]:
        call = {"id": f"c{n}", "type": "function",
                "function": {"name": "peek", "arguments": "{}"}}
        return [{"role": "user", "content": f"ask {n}"},
                {"role": "assistant", "content": None, "tool_calls": [call]},
                {"role": "tool", "tool_call_id": f"c{n}", "content": result},
                {"role": "assistant", "content": f"answer {n}"}]

    long = "row,value\n" + "x,1\n" * 400
    history = [{"role": "system", "content": "s"}, *turn(1, snip_placeholder("c1")),
               *turn(2, long), *turn(3, long)]
    session.rewrite(history)
    plan = CacheMemory.plan(session, [], enabled=True)
    assert plan.boundary == 3  # the cleared result of turn 1
    snipped = [*history[:7], {**history[7], "content": snip_placeholder("c2")}, *history[8:]]
    session.rewrite(snipped)
    plan = CacheMemory.plan(session, [], enabled=True)
    assert plan.previous == 3 and plan.boundary == 7  # read through 3, then mark 7


def test_the_setting_is_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NBAGENT_PROMPT_CACHING", raising=False)
    assert Settings.from_env().prompt_caching
    monkeypatch.setenv("NBAGENT_PROMPT_CACHING", "false")
    assert not Settings.from_env().prompt_caching


def test_billing_counts_each_kind_of_token_and_the_cache_read_share() -> None:
    billing = Billing()
    billing.add(Usage(input_tokens=100, output_tokens=10, cache_write_tokens=900),
                cost=0.0039, input_cost=0.00367)
    billing.add(Usage(input_tokens=50, output_tokens=20, cache_read_tokens=950),
                cost=0.0006, input_cost=0.0003)
    assert (billing.requests, billing.prompt_tokens, billing.output_tokens) == (2, 2_000, 30)
    assert billing.cache_read_share == pytest.approx(950 / 2_000)
    assert billing.cost == pytest.approx(0.0045) and billing.input_cost == pytest.approx(0.00397)
    billing.add(None, cost=0.001)  # a reply without usage: its cost still counts
    assert billing.requests == 3 and billing.input_cost == pytest.approx(0.00497)
    assert Billing().cache_read_share == 0.0


def test_each_chat_request_joins_the_sessions_billing() -> None:
    model = ScriptedModel([calls(("add", {"a": 1, "b": 2})), reply("3")])
    agent, _ = make_agent(model, tools=[add])
    result = agent.chat("add")
    assert agent.billing().requests == 2 and result.replaced is False


def test_a_rerun_cell_says_it_replaced_its_exchange() -> None:
    agent, _ = make_agent(ScriptedModel([reply("first"), reply("second"), reply("other")]))
    assert agent.chat("what is df?", exchange="cell-1").replaced is False
    assert agent.chat("what is df, really?", exchange="cell-1").replaced is True
    assert agent.chat("and this?", exchange="cell-2").replaced is False


def test_the_boundary_stops_short_of_a_live_note_the_next_snip_may_clear() -> None:
    """The latest note is never cleared, but once a newer one supersedes it the next snip
    clears it: a breakpoint past it would be rewritten by that snip."""
    from nbagent.engine.compaction import notebook_note
    from nbagent.testing import snip_placeholder

    agent, _ = make_agent(ScriptedModel())
    note = notebook_note([], "x: int = 1")
    assert note is not None
    call = {"id": "c1", "type": "function", "function": {"name": "peek", "arguments": "{}"}}
    history = [{"role": "system", "content": "s"}, {"role": "user", "content": "ask"}, note,
               {"role": "assistant", "content": None, "tool_calls": [call]},
               {"role": "tool", "tool_call_id": "c1", "content": snip_placeholder("c1")},
               {"role": "assistant", "content": "done"}]
    agent.session.rewrite(history)
    assert CacheMemory.plan(agent.session, [], enabled=True).boundary == 1


def test_user_messages_in_a_row_with_image_parts_go_as_one() -> None:
    figures = {"role": "user", "content": [
        {"type": "text", "text": "[nbagent images: figures]\nimage 1: run 1, figure 1"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo"}}]}
    note = {"role": "user", "content": "[nbagent notebook note: x = 1]"}
    tool = {"role": "tool", "tool_call_id": "c1", "content": "plotted"}
    for name in ("openai/gpt-4o", "deepseek/deepseek-chat", "ollama/llava"):
        sent, _ = apply_cache_plan(name, None, [tool, figures, note, {**figures}], None)
        assert [m["role"] for m in sent] == ["tool", "user"]
        parts = sent[1]["content"]
        assert [p["type"] for p in parts] == ["text", "image_url", "text", "image_url"]
        assert parts[2]["text"] == f"{note['content']}\n\n{figures['content'][0]['text']}"
        assert parts[1] == parts[3] == figures["content"][1]
        asked = [{"role": "user", "content": "why?"}, figures]
        sent, _ = apply_cache_plan(name, None, asked, None)
        assert sent == [{"role": "user", "content": [
            {"type": "text", "text": f"why?\n\n{figures['content'][0]['text']}"},
            figures["content"][1]]}]
    assert figures["content"][0]["text"].endswith("figure 1")  # the history is untouched
