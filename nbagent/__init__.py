"""nbagent: chat with a tool-using LLM agent in Jupyter cells, for hours, without the
conversation dying of "prompt too long".

The package root exports the public API; machinery lives in `_`-prefixed modules.
Public modules beside it: `nbagent.events` (the event types), `nbagent.compaction`
(the pure levels), `nbagent.testing` (scripted fakes), `nbagent.local` (the embedded
model), `nbagent.widgets` (the notebook UI). Importing nbagent imports neither
litellm nor IPython nor ipywidgets.
"""

from __future__ import annotations

from .agent._agent import Agent
from .agent._current import current, new_session, reset, set_current
from .agent._loop import ChatResult
from .agent._session import Session
from .agent._settings import Settings
from .agent.models._llm import LiteLLMModel, RetryPolicy
from .agent.providers._errors import classify_error, is_context_overflow
from .agent.tools._tool import Tool, tool
from .engine._breakdown import Breakdown
from .engine._controller import CompactionController
from .engine._decision import Decision
from .engine._exceptions import (
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
from .engine._history import History, validate_messages
from .engine._ladder import Level, levels_for
from .engine._thresholds import ContextState, Thresholds, context_state, thresholds
from .engine._tokens import estimate_message_tokens, estimate_tokens
from .engine._usage import Usage
from .engine._window import WindowInfo, resolve_window
from .engine.compaction._limits import parse_token_limits

__version__ = "0.1.0"


def load_ipython_extension(shell: object) -> None:
    """`%load_ext nbagent`: register %%chat, %chat, %compact, %context, %pin and %nbagent."""
    from .widgets._magics import load

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
