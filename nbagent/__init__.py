"""nbagent: chat with a tool-using LLM agent in Jupyter cells, for hours, without the
conversation dying of "prompt too long".

The package root exports the public API; machinery lives in `_`-prefixed modules.
Public modules beside it: `nbagent.events` (the event types), `nbagent.compaction`
(the pure levels), `nbagent.testing` (scripted fakes), `nbagent.local` (the embedded
model), `nbagent.widgets` (the notebook UI). Importing nbagent imports neither
litellm nor IPython nor ipywidgets.
"""

from __future__ import annotations

from ._agent import Agent
from ._breakdown import Breakdown
from ._controller import CompactionController
from ._current import current, new_session, reset, set_current
from ._decision import Decision
from ._exceptions import (
    ArchiveError,
    BusyError,
    CompactionFailed,
    ConfigWarning,
    HistoryError,
    LocalModelError,
    ModelCallError,
    NbagentError,
    NbagentWarning,
)
from ._history import History, validate_messages
from ._ladder import Level, levels_for
from ._llm import LiteLLMModel, RetryPolicy
from ._loop import ChatResult
from ._provider_errors import classify_error, is_context_overflow
from ._session import Session
from ._settings import Settings
from ._thresholds import ContextState, Thresholds, context_state, thresholds
from ._tokens import Usage, estimate_message_tokens, estimate_tokens
from ._tools import Tool, tool
from ._window import WindowInfo, resolve_window
from .compaction._limits import parse_token_limits

__version__ = "0.1.0"


def load_ipython_extension(shell: object) -> None:
    """`%load_ext nbagent`: register %%chat, %chat, %compact, %context, %pin and %nbagent."""
    from ._magics import load

    load(shell)


__all__ = [
    "Agent",
    "ArchiveError",
    "Breakdown",
    "BusyError",
    "ChatResult",
    "CompactionController",
    "CompactionFailed",
    "ConfigWarning",
    "ContextState",
    "Decision",
    "History",
    "HistoryError",
    "Level",
    "LiteLLMModel",
    "LocalModelError",
    "ModelCallError",
    "NbagentError",
    "NbagentWarning",
    "RetryPolicy",
    "Session",
    "Settings",
    "Thresholds",
    "Tool",
    "Usage",
    "WindowInfo",
    "classify_error",
    "context_state",
    "current",
    "estimate_message_tokens",
    "estimate_tokens",
    "is_context_overflow",
    "levels_for",
    "new_session",
    "parse_token_limits",
    "reset",
    "resolve_window",
    "set_current",
    "thresholds",
    "tool",
    "validate_messages",
]
