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
from tests.agent.test_figure_images import PLOT, FigureRunner

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
