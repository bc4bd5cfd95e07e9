"""nbagent: chat with a tool-using LLM agent in Jupyter cells, for hours, without the
conversation dying of "prompt too long".

The package root exports what a user works with: the agent and the kernel's current one,
the model seam to bring your own model (`ChatModel`, `Completion`), tools, settings, the
records the agent returns, the exceptions, and the engine for use on its own. Public
modules beside it: `nbagent.events` (the event types), `nbagent.compaction` (the levels
and the ladder), `nbagent.providers` (what a provider's error means), `nbagent.testing`
(scripted fakes), `nbagent.local` (the embedded model), `nbagent.mcp` (MCP servers),
`nbagent.code` (code the model runs: the runner contract, `agent_cells`),
`nbagent.widgets` (the notebook UI). Importing nbagent imports neither litellm nor
IPython nor ipywidgets, and each name loads on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .agent._doors import lazy_door as _lazy_door  # private: not a name the root exports

if TYPE_CHECKING:
    from .agent._agent import Agent
    from .agent._billing import Billing
    from .agent._current import current, new_session, reset, set_current
    from .agent._loop import ChatResult
    from .agent._settings import Settings
    from .agent.models._call import RetryPolicy
    from .agent.models._discovery import find_local_models
    from .agent.models._llm import ChatModel, Completion, LiteLLMModel
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
    from .engine._preview import Preview
    from .engine._thresholds import (
        METER_LEVELS,
        ContextState,
        MeterLevel,
        context_state,
        thresholds,
    )
    from .engine._tokens import estimate_message_tokens, estimate_tokens
    from .engine._usage import Usage
    from .engine._window import WindowInfo, resolve_window

# Each name loads on first use, not here (PEP 562, as the agent room's doors do): the parts
# behind the names cost ~0.25 s of CPU (pydantic, some 250 modules), which a process that
# imports nbagent and has not used it yet should not pay (docs/performance.md). The
# engine's parts come first, as every agent part imports them anyway.
_PARTS = (".engine._exceptions", ".engine._tokens", ".engine._usage", ".engine._history",
          ".engine._decision", ".engine._window", ".engine._thresholds", ".engine._breakdown",
          ".engine._preview", ".engine._controller", ".agent.tools._tool", ".agent.models._call",
          ".agent.models._llm", ".agent.models._discovery", ".agent._billing", ".agent._settings",
          ".agent._loop", ".agent._current", ".agent._agent")

__version__ = "0.1.0"


def load_ipython_extension(shell: object) -> None:
    """`%load_ext nbagent`: register %%chat, %chat, %compact, %context, %pin and %nbagent,
    and start importing litellm in the background, so the first chat does not wait for it
    (not when the kernel's session is already one of nbagent's stand-ins, which never
    needs it)."""
    from .agent._current import kernel_agent
    from .agent.models._litellm import import_in_background
    from .agent.models._llm import stand_in_name
    from .widgets._magics import load

    agent = kernel_agent()
    if agent is None or not stand_in_name(agent.model.name):
        import_in_background()  # first: it takes seconds, and the load need not wait for it
    load(shell)


__all__ = [
    "METER_LEVELS",
    "Agent",
    "ArchiveError",
    "Billing",
    "Breakdown",
    "BusyError",
    "ChatModel",
    "ChatResult",
    "CompactionController",
    "CompactionFailed",
    "Completion",
    "ConfigWarning",
    "ContextState",
    "Decision",
    "History",
    "HistoryError",
    "LiteLLMModel",
    "LocalModelError",
    "MeterLevel",
    "ModelCallError",
    "NbagentError",
    "NbagentWarning",
    "Preview",
    "RetryPolicy",
    "Settings",
    "Tool",
    "Usage",
    "WindowInfo",
    "context_state",
    "current",
    "estimate_message_tokens",
    "estimate_tokens",
    "find_local_models",
    "new_session",
    "reset",
    "resolve_window",
    "set_current",
    "thresholds",
    "tool",
    "validate_messages",
]


if not TYPE_CHECKING:  # mypy reads the imports above, so a name no part has is an error
    __getattr__, __dir__ = _lazy_door(globals(), _PARTS)  # see above
