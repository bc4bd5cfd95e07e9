"""The request bodies litellm really builds from what the loop sends, captured by a stub on
127.0.0.1 that speaks each provider's API and bills by its caching rules
(`bench/cache_real.py`): breakpoints where Anthropic needs them and nowhere else, a stable
per-session key for OpenAI, a prefix that only a compaction rewrites, usage counted as
billed."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nbagent import Agent, LiteLLMModel, RetryPolicy, Settings, tool
from nbagent.agent.providers import CachePlan, apply_cache_plan
from nbagent.testing import ScriptedSummarizer
from tests.agent.providers.test_caching import FAMILY_SAMPLES

sys.path.insert(0, str(Path(__file__).parents[2] / "bench"))
from cache_real import (  # noqa: E402
    Prices,
    ProviderStub,
    anthropic_blocks,
    render_openai,
)

pytestmark = pytest.mark.real
SYSTEM = "You help a data scientist in a Jupyter notebook. Be exact about names. " * 80


@tool
def peek(name: str = "") -> str:
    """Show the first rows of a table."""
    return "region,month,revenue\n" + "\n".join(f"r{i % 7},{i % 12},{i * 13.5}" for i in
                                                 range(300))


@pytest.fixture
def stub() -> Iterator[ProviderStub]:
    with ProviderStub(summarize=lambda prompt: "- the user studies revenue by region") as s:
        yield s


def agent_for(stub: ProviderStub, name: str, namespace: dict[str, Any] | None = None,
              **settings: Any) -> Agent:
    base = stub.base_url if name.startswith(("anthropic/", "bedrock/")) else \
        f"{stub.base_url}/v1"
    return Agent(model=LiteLLMModel(name, api_base=base, api_key="sk-test-not-real"),
                 tools=[peek], builtin_tools=False, system=SYSTEM,
                 namespace={"threshold": 0.5} if namespace is None else namespace,
                 settings=Settings.from_env(overrides={"max_context_tokens": 60_000,
                                                       **settings}),
                 retry=RetryPolicy(sleep=lambda s: None),
                 summarize=ScriptedSummarizer(default="- the user studies revenue by region"))


def chat_turns(stub: ProviderStub, agent: Agent, turns: int) -> None:
    for t in range(turns):
        stub.steps.extend([[("peek", {"name": f"sales_{t}"})], f"Revenue peaks in r{t % 7}."])
        agent.chat(f"Which region leads in month {t}?")


def marks_of(body: dict[str, Any]) -> list[str]:
    return [where for where, block in anthropic_blocks(body) if "cache_control" in block]


def stripped(body: dict[str, Any]) -> list[str]:
    return [json.dumps([where, {k: v for k, v in block.items() if k != "cache_control"}],
                       sort_keys=True) for where, block in anthropic_blocks(body)]


def test_anthropic_requests_carry_breakpoints_on_the_system_prompt_and_the_latest_message(
        stub: ProviderStub) -> None:
    agent = agent_for(stub, "anthropic/claude-sonnet-4-5")
    chat_turns(stub, agent, 3)
    bodies = [body for _, body in stub.bodies]
    assert len(bodies) == 6 and not stub.probes[1:]  # one request per round, nothing else
    for number, body in enumerate(bodies):
        marks = marks_of(body)
        assert marks[0] == "system" and 2 <= len(marks) <= 4
        assert "cache_control" in json.dumps(body["messages"][-1]["content"][-1])  # latest
        assert number == 0 or len(marks) == 3  # + the previous request's latest
    assert "cache_control" not in json.dumps(bodies[0].get("tools"))


def notes_in(body: dict[str, Any]) -> list[str]:
    return [block["text"] for where, block in anthropic_blocks(body)
            if where.startswith("user:") and "nbagent notebook note" in block.get("text", "")]


def test_the_notebook_context_is_sent_once_until_the_variables_change(
        stub: ProviderStub) -> None:
    """It joins the history as a note after the user's message (litellm sends both as one
    Anthropic turn), so the requests after it read it from the cache; a change of the
    variables appends a new note, and nothing sent before is edited."""
    namespace: dict[str, Any] = {"threshold": 0.5}
    agent = agent_for(stub, "anthropic/claude-sonnet-4-5", namespace=namespace)
    chat_turns(stub, agent, 2)
    namespace["model_v2"] = [1, 2, 3]
    chat_turns(stub, agent, 1)
    bodies = [body for _, body in stub.bodies]
    first = bodies[0]["messages"][-1]["content"]
    assert first[0]["text"] == "Which region leads in month 0?" and "threshold" in first[1]["text"]
    assert [len(notes_in(b)) for b in bodies] == [1, 1, 1, 1, 2, 2]
    assert notes_in(bodies[3]) == notes_in(bodies[4])[:1] and "model_v2" in notes_in(bodies[4])[1]
    assert all(b.cache_read_tokens >= p.cache_read_tokens + p.cache_write_tokens
               for p, b in zip(stub.bills, stub.bills[1:], strict=False))  # none rewritten


def test_the_prefix_up_to_the_last_breakpoint_is_byte_identical_in_the_next_request(
        stub: ProviderStub) -> None:
    agent = agent_for(stub, "anthropic/claude-sonnet-4-5")
    chat_turns(stub, agent, 4)
    bodies = [body for _, body in stub.bodies]
    for before, after in zip(bodies, bodies[1:], strict=False):
        last = max(i for i, (_, block) in enumerate(anthropic_blocks(before))
                   if "cache_control" in block)
        assert stripped(after)[:last + 1] == stripped(before)[:last + 1]
    bills = stub.bills
    assert all(b.cache_read_tokens >= p.cache_read_tokens + p.cache_write_tokens
               for p, b in zip(bills, bills[1:], strict=False))  # each reads all written before


def test_a_compaction_rewrites_the_prefix_once(stub: ProviderStub) -> None:
    agent = agent_for(stub, "anthropic/claude-sonnet-4-5")
    chat_turns(stub, agent, 6)
    before = len(stub.bills)
    assert agent.compact().changed
    chat_turns(stub, agent, 4)
    after = stub.bills[before:]
    chats = [b for b in after if b.chat]
    assert chats[0].cache_read_tokens < stub.bills[before - 1].cache_read_tokens  # rewritten
    assert all(b.cache_read_tokens >= p.cache_read_tokens + p.cache_write_tokens
               for p, b in zip(chats, chats[1:], strict=False))  # then read again: once


def test_bedrock_and_vertex_claude_bodies_carry_the_providers_own_markers(
        stub: ProviderStub, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIATESTNOTREAL")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-a-real-secret")
    monkeypatch.setenv("AWS_REGION_NAME", "us-east-1")
    agent = agent_for(stub, "bedrock/us.anthropic.claude-sonnet-4-5-20250929-v1:0")
    chat_turns(stub, agent, 1)
    provider, body = stub.bodies[-1]
    assert provider == "bedrock" and '"cachePoint"' in json.dumps(body["system"])
    assert '"cachePoint"' in json.dumps(body["messages"][-1])
    from litellm.llms.vertex_ai.vertex_ai_partner_models.anthropic.transformation import (
        VertexAIAnthropicConfig,
    )

    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "hi"}]
    plan = CachePlan(stable=2, prefix_tokens=[1_500, 1_510])
    sent, options = apply_cache_plan("vertex_ai/claude-sonnet-4-5", "vertex_ai", messages,
                                     plan)
    vertex = VertexAIAnthropicConfig().transform_request(
        model="claude-sonnet-4-5", messages=sent, optional_params={"max_tokens": 100},
        litellm_params={}, headers={})
    assert json.dumps(vertex).count("cache_control") == 2 and options == {}


@pytest.mark.parametrize(("name", "keyed"), [("openai/gpt-4o", True),
                                             ("deepseek/deepseek-chat", False)],
                         ids=["openai", "deepseek"])
def test_automatic_cachers_get_no_markers_and_openai_a_stable_session_key(
        stub: ProviderStub, name: str, keyed: bool) -> None:
    agent = agent_for(stub, name)
    chat_turns(stub, agent, 3)
    bodies = [body for _, body in stub.bodies]
    assert all("cache_control" not in json.dumps(body) for body in bodies)
    keys = {body.get("prompt_cache_key") for body in bodies}
    assert keys == ({f"nbagent-{agent.session_id}"} if keyed else {None})
    for before, after in zip(bodies, bodies[1:], strict=False):  # the history part is a prefix
        history = render_openai({**before, "messages": before["messages"][:-1]})
        assert render_openai(after).startswith(history)
    assert sum(b.cache_read_tokens for b in stub.bills) > 0


def test_the_setting_turns_markers_and_keys_off(stub: ProviderStub,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NBAGENT_PROMPT_CACHING", "false")
    chat_turns(stub, agent_for(stub, "anthropic/claude-sonnet-4-5"), 2)
    chat_turns(stub, agent_for(stub, "openai/gpt-4o"), 2)
    text = json.dumps([body for _, body in stub.bodies])
    assert "cache_control" not in text and "prompt_cache_key" not in text


@pytest.mark.parametrize(("name", "priced_as"), [
    ("anthropic/claude-sonnet-4-5", "claude-sonnet-4-5"), ("openai/gpt-4o", "gpt-4o"),
    ("deepseek/deepseek-chat", "deepseek/deepseek-chat")], ids=["anthropic", "openai", "deepseek"])
def test_the_session_counts_what_the_provider_billed(stub: ProviderStub, name: str,
                                                      priced_as: str) -> None:
    agent = agent_for(stub, name)
    chat_turns(stub, agent, 3)
    billing = agent.billing()
    bills = [b for b in stub.bills if b.chat]
    assert billing.requests == len(bills) == 6
    assert (billing.input_tokens, billing.cache_read_tokens, billing.cache_write_tokens) == (
        sum(b.input_tokens for b in bills), sum(b.cache_read_tokens for b in bills),
        sum(b.cache_write_tokens for b in bills))
    prices = Prices.of(priced_as)
    assert billing.input_cost == pytest.approx(sum(prices.input_cost(b) for b in bills),
                                               rel=1e-6)
    assert 0 < billing.cache_read_share < 1


def test_the_real_path_bench_runs_a_short_session_with_no_extra_requests() -> None:
    from cache_real import run

    result = run("anthropic", 12)
    assert result.real.requests == result.steps == result.replay.requests
    assert result.real.other_requests <= 1  # the one start-of-session server probe
    assert result.real.cache_read_share > 0.8 and result.replay.cache_read_share > 0.8


@pytest.mark.parametrize("provider", ["anthropic", "deepseek"])
def test_across_compactions_the_real_path_is_billed_about_what_the_controller_is(
        provider: str) -> None:
    """The same messages through a bare controller, billed by the same rules, are the
    floor: the request path adds no rewrite of its own (a state block at the front, a
    context on every request, a breakpoint that misses after a snip all did)."""
    from cache_real import run

    # 80 turns on a 24,000-token window: six or seven compactions, enough for the ratio
    # (the bench's 40,000-token window needs 140 turns for eight to ten, at twice the CPU);
    # where they fall moves it a little (1.00 and 1.05 measured here, 1.00 and 1.07 there)
    result = run(provider, 80, window=24_000)
    assert result.real.compactions >= 5 and result.notes >= 10
    assert result.real.cache_read_share > 0.95
    assert result.real.billed_input <= 1.1 * result.replay.billed_input


def test_a_resumed_session_keeps_its_notes_and_sends_none_while_nothing_changed(
        stub: ProviderStub) -> None:
    namespace: dict[str, Any] = {"threshold": 0.5}
    agent = agent_for(stub, "anthropic/claude-sonnet-4-5", namespace=namespace)
    chat_turns(stub, agent, 1)
    archive = agent.session.archive
    assert archive is not None
    agent.close()
    resumed = Agent.resume(archive.path, model=agent.model, namespace=namespace,
                           retry=RetryPolicy(sleep=lambda s: None))
    assert [m for m in resumed.history if m["role"] == "user"] == [
        m for m in agent.history if m["role"] == "user"]  # the question and its note
    sent = len(stub.bodies)
    chat_turns(stub, resumed, 1)
    assert [len(notes_in(body)) for _, body in stub.bodies[sent:]] == [1, 1]  # the old one
    resumed.close()


# Each cache family's sample models are tests/agent/providers/test_caching.py's (a row of
# FAMILIES without samples fails there, in the fast tests): whether a row's route joins
# user messages itself is checked here on the body litellm really builds.
@pytest.mark.parametrize("name", ["anthropic/claude-sonnet-4-5",
                                  "bedrock/us.anthropic.claude-sonnet-4-5-20250929-v1:0",
                                  "openai/gpt-4o", "deepseek/deepseek-chat"])
def test_no_body_sends_two_user_messages_in_a_row(stub: ProviderStub, name: str,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A note follows the user's message in the history; what goes out is one user turn
    (litellm joins them for Anthropic and Bedrock, nbagent for the others: each family's
    `route_joins_user_messages`), as providers and chat templates that want turns to
    alternate require."""
    for variable, value in (("AWS_ACCESS_KEY_ID", "AKIATESTNOTREAL"),
                            ("AWS_SECRET_ACCESS_KEY", "not-a-real-secret"),
                            ("AWS_REGION_NAME", "us-east-1")):
        monkeypatch.setenv(variable, value)
    namespace: dict[str, Any] = {"threshold": 0.5}
    agent = agent_for(stub, name, namespace=namespace)
    chat_turns(stub, agent, 1)
    namespace["model_v2"] = [1, 2, 3]
    chat_turns(stub, agent, 1)
    assert sum(1 for m in agent.history if "nbagent notebook note" in str(m["content"])) == 2
    for _, body in stub.bodies:
        roles = [m["role"] for m in body["messages"]]
        assert all(not (a == b == "user") for a, b in zip(roles, roles[1:], strict=False))
    assert "model_v2" in json.dumps(stub.bodies[-1][1]["messages"])


@pytest.mark.parametrize("name", [n for names in FAMILY_SAMPLES.values() for n in names])
def test_each_familys_route_sends_user_messages_in_a_row_as_one_turn(
        stub: ProviderStub, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two user messages stored in a row (one the history already ends on, then the
    question) reach the provider as one user turn on every family's route: joined by
    litellm where the row says its route joins them, by nbagent everywhere else."""
    for variable, value in (("AWS_ACCESS_KEY_ID", "AKIATESTNOTREAL"),
                            ("AWS_SECRET_ACCESS_KEY", "not-a-real-secret"),
                            ("AWS_REGION_NAME", "us-east-1")):
        monkeypatch.setenv(variable, value)
    agent = agent_for(stub, name, namespace={})
    agent.history.extend([{"role": "user", "content": "The sales table is loaded."}])
    chat_turns(stub, agent, 1)
    roles = [m["role"] for m in agent.history]
    assert roles[:3] == ["system", "user", "user"]  # stored as two
    assert stub.bodies
    for _, body in stub.bodies:
        roles = [m["role"] for m in body["messages"]]
        assert all(not (a == b == "user") for a, b in zip(roles, roles[1:], strict=False))
    assert "The sales table is loaded." in json.dumps(stub.bodies[0][1]["messages"])
