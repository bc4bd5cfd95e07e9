"""The embedded model's chat handler (`_chat_handler`): the text reaches the prompt as it
was written, tool calls are parsed (how the prompt shows them is `test_tool_prompt`'s),
and a reply that is raw tool-call syntax is never the answer. The handler's generation logic runs against a
scripted stand-in for `llama_cpp.Llama` (it yields the texts it is given, and records
each prompt and grammar); the prompt tests use the GGUF's real template and tokenizer."""

from __future__ import annotations

import html
import json
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("llama_cpp")

from nbagent.agent.models._chat_handler import (  # noqa: E402
    ANSWER,
    CALL,
    call_grammar,
    handler,
    parse_calls,
)
from nbagent.local import TOOL_CALLING_FORMAT, prompt_counter  # noqa: E402
from tests.agent.models.helpers import SHOW_ROWS  # noqa: E402

TRICKY = "it's \"5 < 6 & 7 > 3\" — <b>bold</b> &amp; 'quoted'"


class ScriptedLlama:
    """What the handler uses of `llama_cpp.Llama`: the GGUF's template, a tokenizer, and
    a generation per queued text (streamed a few characters at a time)."""

    def __init__(self, *replies: str) -> None:
        self.metadata = {"tokenizer.chat_template": prompt_counter().metadata[
            "tokenizer.chat_template"]}
        self.replies = list(replies)
        self.prompts: list[str] = []
        self.grammars: list[Any] = []
        self.seeds: list[Any] = []

    def tokenize(self, text: bytes, add_bos: bool = True, special: bool = False) -> list[int]:
        return list(range(len(text.split())))

    def create_completion(self, prompt: str, **options: Any) -> Iterator[dict[str, Any]]:
        self.prompts.append(prompt)
        self.grammars.append(options.get("grammar"))
        self.seeds.append(options.get("seed"))
        text = self.replies.pop(0)
        for at in range(0, len(text), 3):
            yield {"choices": [{"text": text[at:at + 3], "finish_reason": None}]}
        yield {"choices": [{"text": "", "finish_reason": "stop"}]}


def reply(llama: ScriptedLlama, tools: list[dict[str, Any]], choice: Any = "auto",
          ) -> tuple[str, list[dict[str, Any]], str | None]:
    chunks = list(handler(llama, [{"role": "user", "content": "rows?"}], tools=tools,
                          tool_choice=choice, stream=True))
    deltas = [c["choices"][0]["delta"] for c in chunks]
    text = "".join(d.get("content") or "" for d in deltas)
    calls = [call for d in deltas for call in d.get("tool_calls") or ()]
    return text, calls, chunks[-1]["choices"][0]["finish_reason"]


def test_the_prompt_holds_the_text_exactly_as_written() -> None:
    counter = prompt_counter()
    assert counter.chat_format == TOOL_CALLING_FORMAT
    prompt = counter.render([{"role": "system", "content": TRICKY},
                             {"role": "user", "content": TRICKY},
                             {"role": "assistant", "content": TRICKY}], [SHOW_ROWS], "auto")
    assert isinstance(prompt, str) and prompt.count(TRICKY) == 3
    assert html.escape(TRICKY) not in prompt and "&#39;" not in prompt
    assert "&quot;" not in prompt and "&lt;" not in prompt and "&gt;" not in prompt


@pytest.mark.parametrize(("text", "expected"), [
    ('functions.show_rows:\n{"column": "region"}', [("show_rows", {"column": "region"})]),
    ('functions.show_rows: {"column": "a"}\nfunctions.show_rows:\n{"column": "b"}',
     [("show_rows", {"column": "a"}), ("show_rows", {"column": "b"})]),
    ('<tool_call>{"name": "show_rows", "arguments": {"column": "r"}}</tool_call>',
     [("show_rows", {"column": "r"})]),
    ('<tool_call>[{"name": "show_rows", "arguments": "{\\"column\\": \\"r\\"}"}]</tool_call>',
     [("show_rows", {"column": "r"})]),
    ("functions.list_variables: { }", None),  # a tool not offered
    ("functions.show_rows: {column}", None),  # not JSON
    ("The rows are fine.", None),
], ids=["ours", "two-calls", "hermes", "hermes-list-string-args", "unknown-tool", "bad-json",
        "an-answer"])
def test_tool_calls_are_parsed_only_when_well_formed_calls_of_offered_tools(
        text: str, expected: list[tuple[str, dict[str, Any]]] | None) -> None:
    calls = parse_calls(text, {"show_rows"})
    if expected is None:
        assert calls is None
    else:
        assert calls is not None
        assert [(c["function"]["name"], json.loads(c["function"]["arguments"]))
                for c in calls] == expected


def test_the_grammar_binds_a_call_to_an_offered_tool_and_its_arguments() -> None:
    rules = call_grammar({"show_rows": SHOW_ROWS["function"]}, answer=True)._grammar
    assert rules.startswith(f'root ::= "{CALL}" ( "show_rows:"') and f'"{ANSWER}"' in rules
    assert '\\"column\\"' in rules and '\\"start\\"' in rules
    assert f'"{ANSWER}"' not in call_grammar({"show_rows": SHOW_ROWS["function"]},
                                            answer=False)._grammar


def test_an_answer_streams_without_its_marker() -> None:
    llama = ScriptedLlama(f"{ANSWER} The table has <3 & 4> rows.")
    text, calls, finish = reply(llama, [SHOW_ROWS])
    assert (text, calls, finish) == ("The table has <3 & 4> rows.", [], "stop")
    assert llama.grammars[0] is not None  # tools offered: the reply's shape is bound


def test_a_call_is_sent_as_a_tool_call_never_as_text() -> None:
    text, calls, finish = reply(ScriptedLlama('functions.show_rows:\n{"column": "region"}'),
                                [SHOW_ROWS])
    assert text == "" and finish == "tool_calls"
    assert calls[0]["function"] == {"name": "show_rows", "arguments": '{"column": "region"}'}


def test_raw_tool_syntax_when_no_tool_may_be_called_is_asked_again_as_an_answer() -> None:
    llama = ScriptedLlama("functions.list_variables: { }", "Two variables: df and rate.")
    text, calls, finish = reply(llama, [], "none")
    assert (text, calls, finish) == ("Two variables: df and rate.", [], "stop")
    assert llama.grammars[0] is None and llama.grammars[1] is not None  # retried, bound
    assert llama.prompts[0] == llama.prompts[1]


def test_an_answer_that_only_starts_like_a_marker_streams_whole() -> None:
    text, _, _ = reply(ScriptedLlama("func is a short name for function."), [], "none")
    assert text == "func is a short name for function."


def test_a_reply_is_drawn_with_a_seed_from_its_own_prompt() -> None:
    def seed_for(question: str, **sampling: Any) -> Any:
        llama = ScriptedLlama("ok")
        list(handler(llama, [{"role": "user", "content": question}], tools=[],
                     tool_choice="none", stream=True, **sampling))
        return llama.seeds[0]

    first = seed_for("Which columns does trips have?")
    assert first == seed_for("Which columns does trips have?")  # reproducible
    assert first != seed_for("What is the average fare?")  # another question, another draw
    assert seed_for("Which columns does trips have?", seed=7) == 7  # a seed asked for wins
