"""The model seam and every model behind it, the agent room's door to them: the `ChatModel`
protocol and what a call returns (`Completion`), litellm's models (`LiteLLMModel`,
`call_model` with its `RetryPolicy`, `summarizer`, `model_info`, and `litellm`, the one door
to the library), which object a name means (`chat_model`, `compact_model`, `is_local`,
`request_counter`, `counter_for`), the embedded model (`EmbeddedModel`, `LocalModel`,
`LocalServer`, `local_model`, `server_threads`, `gguf_path`, its `STARTING` line,
`amx_advertised`: a CPU the server runs without AMX on), local models already on the machine
(`discover`, `find_local_models`, `best`, `first_run_notice`, `probe_servers`,
`find_gguf_files`, and `RUNTIMES`, the table of local runtimes they and the window probe
read) and a local server's window (`probe_window`, `is_local_host`), and a streamed reply's
events (`event_data`). `nbagent.local` is the user's door to the embedded model;
`nbagent.testing` holds the scripted fakes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._doors import lazy_door

if TYPE_CHECKING:
    from ._call import RetryPolicy, call_model, summarizer
    from ._counters import counter_for
    from ._discovery import FoundModel, best, discover, find_local_models, first_run_notice
    from ._embedded import LOCAL_MODEL, STARTING, EmbeddedModel
    from ._gguf import gguf_path
    from ._gguf_files import GgufFile, cache_folders, find_gguf_files, read_header
    from ._litellm import litellm
    from ._llm import (
        ChatModel,
        Completion,
        LiteLLMModel,
        model_info,
        takes_cache_plan,
        takes_notes,
    )
    from ._local_model import LocalModel
    from ._local_runtimes import RUNTIMES, Runtime, probe_servers
    from ._local_server import LocalServer, amx_advertised, local_model, server_threads
    from ._resolve import chat_model, compact_model, is_local, request_counter
    from ._server_info import ServerWindow, is_local_host, probe_window
    from ._stream import event_data

# The names load on first use, not here: `_llm` imports the providers folder's caching
# rules while its error reading asks `_litellm` here, so importing them here would turn
# that into a circle between the two packages, whichever is entered first.
_PARTS = ("._llm", "._call", "._litellm", "._resolve", "._embedded", "._counters",
          "._discovery", "._gguf", "._gguf_files", "._local_model", "._local_runtimes",
          "._local_server", "._server_info", "._stream")

__all__ = [
    "LOCAL_MODEL",
    "STARTING",
    "ChatModel",
    "Completion",
    "EmbeddedModel",
    "FoundModel",
    "GgufFile",
    "LiteLLMModel",
    "LocalModel",
    "LocalServer",
    "RUNTIMES",
    "RetryPolicy",
    "Runtime",
    "ServerWindow",
    "amx_advertised",
    "best",
    "cache_folders",
    "call_model",
    "chat_model",
    "compact_model",
    "counter_for",
    "discover",
    "event_data",
    "find_gguf_files",
    "find_local_models",
    "first_run_notice",
    "gguf_path",
    "is_local",
    "is_local_host",
    "litellm",
    "local_model",
    "model_info",
    "probe_servers",
    "probe_window",
    "read_header",
    "request_counter",
    "server_threads",
    "summarizer",
    "takes_cache_plan",
    "takes_notes",
]


if not TYPE_CHECKING:  # mypy reads the imports above, so a name no part has is an error
    __getattr__, __dir__ = lazy_door(globals(), _PARTS)  # see above
