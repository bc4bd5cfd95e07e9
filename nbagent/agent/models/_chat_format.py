"""Which llama-cpp-python chat format a GGUF is served with, read from its own chat
template: our own handler (`_chat_handler`: no escaping, tool calls as ChatML models were
trained to make them) for ChatML models, the GGUF's template otherwise."""

from __future__ import annotations

from collections.abc import Mapping

TOOL_CALLING_FORMAT = "nbagent-chatml"  # _chat_handler.FORMAT: real tool calls, exact text


def chat_format_for(metadata: Mapping[str, str]) -> str | None:
    """The chat format the server should run a GGUF with: our handler, with real tool
    calls, for ChatML models (SmolLM2, Qwen, Hermes, ...), otherwise None — the server then
    picks the GGUF's own template (forced tool calls work; automatic ones come back as text).
    """
    template = metadata.get("tokenizer.chat_template", "")
    return TOOL_CALLING_FORMAT if "<|im_start|>" in template else None
