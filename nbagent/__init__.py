"""nbagent: chat with a tool-using LLM agent in Jupyter cells, for hours, without the
conversation dying of "prompt too long".

The package root exports the public API; machinery lives in `_`-prefixed modules.
Importing nbagent imports neither litellm nor IPython nor ipywidgets.
"""

from __future__ import annotations

from ._agent import Agent, ChatResult
from ._controller import CompactionController, CompactionStarted, Decision
from ._exceptions import ConfigWarning, HistoryError, ModelCallError, NbagentError, NbagentWarning
from ._history import History, Span, validate_messages
from ._llm import LiteLLMModel, RetryPolicy
from ._session import current, new_session, set_current
from ._settings import Settings
from ._thresholds import ContextState, Thresholds, context_state, thresholds
from ._tokens import Usage, estimate_message_tokens, estimate_tokens
from ._tools import Tool, tool
from ._tracker import TokenTracker
from ._window import WindowInfo, resolve_window
from .compaction import parse_token_limits
from ._provider_errors import classify_error, is_context_overflow

__version__ = "0.1.0"


def load_ipython_extension(shell: object) -> None:
    """`%load_ext nbagent`: register %%chat, %chat, %compact, %context and %nbagent."""
    from ._magics import load

    load(shell)

__all__ = [
    "current",
    "new_session",
    "set_current",
    "Agent",
    "ChatResult",
    "LiteLLMModel",
    "ModelCallError",
    "RetryPolicy",
    "Tool",
    "classify_error",
    "is_context_overflow",
    "tool",
    "CompactionController",
    "CompactionStarted",
    "Decision",
    "ConfigWarning",
    "ContextState",
    "History",
    "HistoryError",
    "NbagentError",
    "NbagentWarning",
    "Settings",
    "Span",
    "Thresholds",
    "TokenTracker",
    "Usage",
    "WindowInfo",
    "context_state",
    "estimate_message_tokens",
    "estimate_tokens",
    "parse_token_limits",
    "resolve_window",
    "thresholds",
    "validate_messages",
]
