"""Prompt caching without a network (`providers/_caching`): which provider family gets which
markers, the minimum prefix worth a breakpoint, where at most four breakpoints go, what each
family's request carries (markers on copies, a session key, nothing), user messages in a row
sent as one, and the setting that turns it off. Where the notebook context goes and what the
previous request's breakpoint is are tests/agent/test_request.py's; what a session was
billed, tests/agent/test_billing.py's."""

from __future__ import annotations

from typing import Any

import pytest

from nbagent import Settings
from nbagent.agent.providers import (
    FAMILIES,
    CachePlan,
    apply_cache_plan,
    breakpoints,
    cache_family,
    family_of,
    minimum_cacheable,
)


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


# Each row of FAMILIES, by its words (two rows may cache the same way: OpenRouter's Claude
# models are marked like Anthropic's, but not joined by their route), and sample models it
# holds. tests/real/test_cache_bodies.py sends each through litellm's real transformation.
FAMILY_SAMPLES: dict[str, list[str]] = {
    "Anthropic, Bedrock's and Vertex's Claude models": [
        "anthropic/claude-sonnet-4-5", "bedrock/us.anthropic.claude-sonnet-4-5-20250929-v1:0"],
    "Gemini, Vertex's other models, the embedded model, Ollama and LM Studio": [
        "lm_studio/qwen2.5-7b-instruct"],
    "OpenAI": ["openai/gpt-4o"],
    "DeepSeek and the rest": ["deepseek/deepseek-chat", "openai/my-local-llama"],
}


def test_every_cache_family_has_samples_that_belong_to_it() -> None:
    """A new row of FAMILIES fails here, in the fast tests, until it has samples; each
    sample is held by its row as litellm names the provider (no network: a name rule)."""
    from nbagent.agent.models import litellm  # litellm, with its local cost map

    get_llm_provider = litellm().get_llm_provider
    assert list(FAMILY_SAMPLES) == [family.named for family in FAMILIES]
    for named, names in FAMILY_SAMPLES.items():
        for name in names:
            assert family_of(name, get_llm_provider(name)[1]).named == named, name


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


def test_the_setting_is_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NBAGENT_PROMPT_CACHING", raising=False)
    assert Settings.from_env().prompt_caching
    monkeypatch.setenv("NBAGENT_PROMPT_CACHING", "false")
    assert not Settings.from_env().prompt_caching


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
