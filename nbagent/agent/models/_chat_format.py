"""Which llama-cpp-python chat format a GGUF is served with, read from its own chat
template: real tool calls for ChatML models, the GGUF's template otherwise."""

from __future__ import annotations

from collections.abc import Mapping

TOOL_CALLING_FORMAT = "chatml-function-calling"  # llama-cpp-python's real tool calls


def chat_format_for(metadata: Mapping[str, str]) -> str | None:
    """The chat format the server should run a GGUF with: llama-cpp-python's real tool
    calling for ChatML models (SmolLM2, Qwen, Hermes, ...), otherwise None — the server then
    picks the GGUF's own template (forced tool calls work; automatic ones come back as text).
    """
    template = metadata.get("tokenizer.chat_template", "")
    return TOOL_CALLING_FORMAT if "<|im_start|>" in template else None
