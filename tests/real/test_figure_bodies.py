"""The request bodies litellm really builds when the model's code made a figure, captured by
the provider stub on 127.0.0.1 (`bench/cache_real.py`): for a model that reads images the
PNG goes as an image block after the round's tool results — OpenAI's `image_url` part in a
user message after the tool message, Anthropic's base64 `image` block in the same user
turn, after its `tool_result` — and for a model that reads none there is no image at all."""

from __future__ import annotations

import base64
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nbagent import Agent, LiteLLMModel, RetryPolicy, Settings
from nbagent.code import use_code_runner
from tests.agent.figures import PLOT, FigureRunner

sys.path.insert(0, str(Path(__file__).parents[2] / "bench"))
from cache_real import ProviderStub  # noqa: E402

pytestmark = pytest.mark.real
PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def stub() -> Iterator[ProviderStub]:
    previous = use_code_runner(FigureRunner())
    with ProviderStub() as s:
        yield s
    use_code_runner(previous)


def plotting_chat(stub: ProviderStub, name: str) -> Agent:
    base = stub.base_url if name.startswith("anthropic/") else f"{stub.base_url}/v1"
    agent = Agent(model=LiteLLMModel(name, api_base=base, api_key="sk-test-not-real"),
                  namespace={}, retry=RetryPolicy(sleep=lambda s: None),
                  settings=Settings.from_env(overrides={"run_code": "auto",
                                                        "notebook_context": False}))
    stub.steps.extend([[("run_code", {"code": PLOT, "explanation": "plot it"})],
                       "A line that rises, then falls."])
    agent.chat("plot it")
    return agent


def test_openai_gets_an_image_url_part_in_a_user_message_after_the_tool_result(
        stub: ProviderStub) -> None:
    agent = plotting_chat(stub, "openai/gpt-4o")
    (_, first), (_, second) = stub.bodies
    assert "image_url" not in json.dumps(first)
    messages = second["messages"]
    assert [m["role"] for m in messages[-3:]] == ["assistant", "tool", "user"]
    assert isinstance(messages[-2]["content"], str)  # the tool result stays text
    text, image = messages[-1]["content"]
    assert text["type"] == "text" and "agent run 1, figure 1" in text["text"]
    assert image["type"] == "image_url"
    url = image["image_url"]["url"]
    assert url.startswith("data:image/png;base64,")
    assert base64.b64decode(url.split(",", 1)[1]).startswith(PNG)
    agent.close()


def test_anthropic_gets_a_base64_image_block_after_the_tool_result_in_one_user_turn(
        stub: ProviderStub) -> None:
    agent = plotting_chat(stub, "anthropic/claude-sonnet-4-5")
    (_, second) = stub.bodies[1]
    last = second["messages"][-1]
    assert last["role"] == "user"  # the tool result and the figure: one turn
    kinds = [block["type"] for block in last["content"]]
    assert kinds == ["tool_result", "text", "image"]  # tool results first, as it requires
    source = last["content"][2]["source"]
    assert source["type"] == "base64" and source["media_type"] == "image/png"
    assert base64.b64decode(source["data"]).startswith(PNG)
    roles = [m["role"] for m in second["messages"]]
    assert all(not (a == b) for a, b in zip(roles, roles[1:], strict=False))
    agent.close()


@pytest.mark.parametrize("name", ["deepseek/deepseek-chat", "openai/my-own-server"],
                         ids=["text-only", "unknown"])
def test_a_model_that_reads_no_images_gets_no_image_part(stub: ProviderStub,
                                                         name: str) -> None:
    agent = plotting_chat(stub, name)
    bodies = [body for _, body in stub.bodies]
    assert len(bodies) == 2
    sent: Any = json.dumps(bodies)
    assert "image_url" not in sent and "base64," not in sent
    tool = next(m for m in bodies[1]["messages"] if m["role"] == "tool")
    assert "a line plot with 3 points" in tool["content"]  # the description still goes
    agent.close()


def texts_of(body: dict[str, Any]) -> list[str]:
    """Every text a body's messages carry (a string content, or its text blocks)."""
    found: list[str] = []
    for message in body["messages"]:
        content = message.get("content")
        if isinstance(content, str):
            found.append(content)
        elif isinstance(content, list):
            found += [str(b.get("text", "")) for b in content if isinstance(b, dict)]
    return found


@pytest.mark.parametrize("name", ["openai/gpt-4o", "anthropic/claude-sonnet-4-5"])
def test_with_notes_on_no_body_sends_two_user_messages_in_a_row(stub: ProviderStub,
                                                                name: str) -> None:
    """A note due after a round's figures waits a request (a second user message in a row
    is what some providers' chat templates refuse); the next turn's question carries it."""
    base = stub.base_url if name.startswith("anthropic/") else f"{stub.base_url}/v1"
    agent = Agent(model=LiteLLMModel(name, api_base=base, api_key="sk-test-not-real"),
                  namespace={"threshold": 0.5}, retry=RetryPolicy(sleep=lambda s: None),
                  settings=Settings.from_env(overrides={"run_code": "auto"}))
    plot = [("run_code", {"code": "peak = 3\n" + PLOT, "explanation": "plot it"})]
    stub.steps.extend([plot, plot, "Two plots.", "Done."])
    agent.chat("plot it twice")
    agent.chat("and now?")
    bodies = [body for _, body in stub.bodies]
    assert len(bodies) == 4
    for body in bodies:
        roles = [m["role"] for m in body["messages"]]
        assert all(not (a == b == "user") for a, b in zip(roles, roles[1:], strict=False))
    assert json.dumps(bodies[1]).count("data:image/png" if "openai" in name else
                                       '"media_type": "image/png"') == 1
    # the variable the runs made reaches the model with the next question
    for body in bodies[:3]:  # in the turn that made it, a note would have followed figures
        notes = [text for text in texts_of(body) if "nbagent notebook note" in text]
        assert not any("peak" in text for text in notes)
    last = json.dumps(bodies[3]["messages"][-1])
    assert "nbagent notebook note" in last and "peak" in last
    agent.close()


@pytest.mark.parametrize("name", ["openai/gpt-4o", "openai/my-own-server"])
def test_a_question_after_a_rounds_figures_goes_in_the_same_user_message(
        stub: ProviderStub, name: str) -> None:
    """A turn that ended after its figures (no reply came) leaves them last: the next
    question joins them, text and image parts, in one user message as litellm builds it."""
    png = base64.b64encode(PNG + b"\x00" * 16).decode()
    figures = {"role": "user", "content": [
        {"type": "text", "text": "[nbagent images: figures made by the tool calls above]"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{png}"}}]}
    model = LiteLLMModel(name, api_base=f"{stub.base_url}/v1", api_key="sk-test-not-real")
    model.complete([{"role": "system", "content": "s"}, figures,
                    {"role": "user", "content": "and now?"}], [], on_text=None)
    ((_, body),) = stub.bodies
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    parts = body["messages"][1]["content"]
    assert [p["type"] for p in parts] == ["text", "image_url", "text"]
    assert parts[1]["image_url"]["url"].endswith(png) and parts[2]["text"] == "and now?"


def no_user_after_tool(body: dict[str, Any]) -> bool:
    roles = [m["role"] for m in body["messages"]]
    return not any(a == "tool" and b == "user" for a, b in zip(roles, roles[1:], strict=False))


def test_mistral_gets_an_assistant_line_between_the_tool_result_and_the_figures(
        stub: ProviderStub) -> None:
    """Mistral refuses a user message right after a tool result ("Unexpected role 'user'
    after role 'tool'"): its request carries a bridge there; the history does not."""
    agent = plotting_chat(stub, "mistral/pixtral-large-latest")  # reads images
    (_, second) = stub.bodies[1]
    assert no_user_after_tool(second)
    roles = [m["role"] for m in second["messages"]]
    assert roles[-4:] == ["assistant", "tool", "assistant", "user"]
    assert "image_url" in json.dumps(second["messages"][-1])  # the figure still goes
    stored = [m["role"] for m in agent.history.messages]
    assert ["tool", "user"] == stored[-3:-1]  # what happened, unchanged
    agent.close()


@pytest.mark.parametrize("name", ["mistral/mistral-small-latest",
                                  "openai/mistralai/Mistral-Small-3.1-24B-Instruct"])
def test_a_question_after_an_unanswered_round_is_bridged_for_mistral_models(
        stub: ProviderStub, name: str) -> None:
    """An interrupted round leaves a tool result last; the next question follows it. For a
    Mistral model (its API, or a server of one's own serving one) a bridge goes between;
    for others the order goes as it is."""
    history = [{"role": "system", "content": "s"}, {"role": "user", "content": "look"},
               {"role": "assistant", "content": None, "tool_calls": [
                   {"id": "c1", "type": "function",
                    "function": {"name": "list_variables", "arguments": "{}"}}]},
               {"role": "tool", "tool_call_id": "c1", "content": "interrupted"},
               {"role": "user", "content": "and now?"}]
    for model_name in (name, "openai/gpt-4o"):
        model = LiteLLMModel(model_name, api_base=f"{stub.base_url}/v1",
                             api_key="sk-test-not-real")
        stub.steps.append("ok")
        model.complete(history, [], on_text=None)
    (_, bridged), (_, plain) = stub.bodies
    assert no_user_after_tool(bridged) and bridged["messages"][-1]["content"] == "and now?"
    assert not no_user_after_tool(plain)  # OpenAI takes it as it is: nothing added
