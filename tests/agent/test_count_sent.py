"""The count is of what is sent: after a switch to a model that reads no images, a round's
figures go as their cleared text (`without_images`), so the meter counts that text, not
the image estimate the history's message would cost a model that reads them."""

from __future__ import annotations

from collections.abc import Callable

from nbagent.code import use_code_runner
from nbagent.engine import (
    REPLY_PRIMING,
    count_message_tokens,
    count_tools_tokens,
    estimate_tokens,
    is_images,
)
from nbagent.testing import ScriptedModel, reply
from tests.agent.figures import VISION, FigureRunner, plotting_turn


def count_of(messages: list[dict[str, object]], tools: list[dict[str, object]],
             counter: Callable[[str], int]) -> int:
    return sum(count_message_tokens(m, counter) for m in messages) + \
        count_tools_tokens(tools, counter) + REPLY_PRIMING

def test_after_a_switch_to_a_model_without_images_the_count_is_the_cleared_text() -> None:
    from nbagent.agent.tools import without_images

    previous = use_code_runner(FigureRunner())
    try:
        agent, _ = plotting_turn(VISION)
    finally:
        use_code_runner(previous)
    assert any(is_images(m) for m in agent.history)
    agent.use_model(ScriptedModel([reply("ok")], name="gpt-3.5-turbo"))  # reads no images
    tools, counter = agent.tool_schemas(), agent.session.tracker.count_text or estimate_tokens
    sent = without_images(agent.history.messages)
    stored = count_of(agent.history.messages, tools, counter)
    assert stored - count_of(sent, tools, counter) > 150  # an image's estimate, against a line
    assert agent.context_state().tokens == count_of(sent, tools, counter)
