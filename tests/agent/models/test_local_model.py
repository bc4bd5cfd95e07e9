"""`LocalModel` (`_local_model`) without a server: which tools a small model is shown in a
turn (one round of calls, then an answer), and the request counted exactly by its own
tokenizer through the chat handler's prompt."""

from __future__ import annotations

from nbagent.demo import SYSTEM
from nbagent.local import (
    TOOL_CALLING_FORMAT,
    LocalModel,
    PromptCounter,
    gguf_path,
    tool_rounds_this_turn,
)

WINDOW = 2048
CALL = {"id": "c1", "type": "function", "function": {"name": "show_rows", "arguments": "{}"}}
TOOLS = [{"type": "function", "function": {"name": "show_rows", "description": "Rows of df",
                                           "parameters": {"type": "object", "properties": {}}}}]


def test_the_small_model_answers_after_one_round_of_tool_calls() -> None:
    model = LocalModel("openai/smollm2", tool_rounds=1)
    turn = [{"role": "system", "content": "s"}, {"role": "user", "content": "rows?"}]
    assert model.choose_tools(turn, TOOLS, None) == "auto"  # the tools are shown to it
    called = [*turn, {"role": "assistant", "content": None, "tool_calls": [CALL]},
              {"role": "tool", "tool_call_id": "c1", "content": "north"}]
    assert tool_rounds_this_turn(called) == 1
    assert model.choose_tools(called, TOOLS, None) == "none"
    assert model.choose_tools([*called, {"role": "user", "content": "more?"}], TOOLS, None) == (
        "auto")  # a new turn, a new round
    assert model.choose_tools(called, TOOLS, "auto") == "auto"  # the caller's choice stands
    assert model.choose_tools(turn, TOOLS, "required") == "auto"  # the handler has no "required"
    assert model.choose_tools(turn, [], None) is None


def test_the_exact_count_needs_no_server() -> None:
    counter = PromptCounter(gguf_path(), TOOL_CALLING_FORMAT)
    model = LocalModel("openai/smollm2", counter=counter, context_window=WINDOW, max_output=64)
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "rows?"}]
    with_tools, without = model.count_request(messages, TOOLS), model.count_request(messages, [])
    assert abs(with_tools - without - model.tools_tokens(TOOLS)) <= 1  # the handler's tool prompt
    assert model.tools_tokens(TOOLS) > 30
    assert model.count_request(messages, TOOLS, "none") == without  # "none" hides the tools
    assert sum(model.message_tokens(m) for m in messages) == without - model.count_request([], [])
    assert counter.count_text("12345") == 5  # SmolLM2 spends a token per digit; o200k two


def test_its_server_refuses_an_over_long_prompt_so_a_shrinking_usage_is_no_cut() -> None:
    """Its prompt shows the tools only at a turn's first request, so the next request of
    the turn reads fewer tokens though more was sent: taken for a cut to fit, that taught a
    421-token window of a 2,048 one (the demo). Its server refuses an over-long prompt
    instead, so it never cuts silently, and the model says so."""
    from nbagent import Usage
    from nbagent.agent import may_cut_silently
    from nbagent.engine import History, TokenTracker

    model = LocalModel("openai/smollm2", api_base="http://127.0.0.1:9")
    assert model.cuts_prompts is False and may_cut_silently(model) is False
    assert may_cut_silently(LocalModel("openai/smollm2", api_base="http://127.0.0.1:9",
                                       context_window=WINDOW)) is False
    history, tracker = History([{"role": "system", "content": SYSTEM},
                                {"role": "user", "content": "rows?"}]), TokenTracker()
    tracker.record_usage(history, Usage(input_tokens=400), model=model.name, tools=TOOLS,
                         may_cut=may_cut_silently(model))
    history.extend([{"role": "assistant", "content": None, "tool_calls": [CALL]},
                    {"role": "tool", "tool_call_id": "c1", "content": "north " * 40}])
    assert tracker.record_usage(history, Usage(input_tokens=380), model=model.name,
                                tools=TOOLS, may_cut=may_cut_silently(model)) is None
