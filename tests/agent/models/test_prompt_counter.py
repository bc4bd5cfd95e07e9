"""The embedded model's counter without a server (`models/_prompt_counter`): one per GGUF per
process, opened with the chat format its server runs; a special token's text counts as that
one token; a request is rendered as the server's chat handler renders it and counted as
the tokens of that prompt; a path naming no file, or a file that is no GGUF, is a
`LocalModelError` that says which. What `LocalModel` counts with it is
tests/agent/models/test_local_model.py's."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("llama_cpp")

from nbagent import LocalModelError  # noqa: E402 (after the skip)
from nbagent.local import TOOL_CALLING_FORMAT, prompt_counter  # noqa: E402

TOOLS = [{"type": "function", "function": {"name": "show_rows", "description": "Rows of df",
                                           "parameters": {"type": "object", "properties": {}}}}]


def test_one_counter_per_gguf_with_the_servers_chat_format() -> None:
    counter = prompt_counter()
    assert prompt_counter() is counter
    assert counter.chat_format == TOOL_CALLING_FORMAT
    assert counter.metadata["general.architecture"] == "llama"


def test_a_special_tokens_text_is_one_token_and_plain_text_is_split() -> None:
    counter = prompt_counter()
    assert counter.count_text("<|im_start|>") == 1
    assert counter.count_text("hello world") == 2
    assert counter.count_text("") == 0


def test_a_request_is_counted_as_the_prompt_the_handler_renders() -> None:
    counter = prompt_counter()
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]
    prompt = counter.render(messages, [], None)
    assert isinstance(prompt, str)
    assert "<|im_start|>system\nBe brief.<|im_end|>" in prompt
    assert prompt.endswith("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n")
    assert counter.count_prompt(messages, [], None) == counter.count_text(prompt)  # no BOS
    with_tools = counter.render(messages, TOOLS, "auto")
    assert isinstance(with_tools, str) and "show_rows" in with_tools
    assert counter.count_prompt(messages, TOOLS, "auto") > counter.count_prompt(messages, [], None)


def test_a_path_to_no_file_or_to_no_gguf_says_which(tmp_path: Path) -> None:
    with pytest.raises(LocalModelError, match="NBAGENT_LOCAL_MODEL_PATH names no file"):
        prompt_counter(tmp_path / "missing.gguf")
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"not a gguf at all" * 64)
    with pytest.raises(LocalModelError, match="is not a GGUF llama.cpp can load"):
        prompt_counter(junk)
