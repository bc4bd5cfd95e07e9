"""What fills the context window, by kind: the numbers behind `%context`."""

from __future__ import annotations

from dataclasses import dataclass

from ._history import History
from ._markers import is_memory, is_notebook_state, is_summary
from ._thresholds import ContextState
from ._tokens import REPLY_PRIMING, TextCounter, count_tools_tokens, estimate_tokens


@dataclass(frozen=True)
class Breakdown:
    """Tokens by kind (calibrated so they add up to the context state's total)."""

    system: int
    tools: int
    memory: int  # session memory, summaries and the notebook-state block nbagent wrote
    tool_results: int
    conversation: int  # user and assistant messages, tool calls
    free: int  # left before the effective window
    state: ContextState

    @property
    def parts(self) -> dict[str, int]:
        return {
            "system prompt": self.system,
            "tool schemas": self.tools,
            "summary / memory": self.memory,
            "tool results": self.tool_results,
            "conversation": self.conversation,
            "free": self.free,
        }


def context_breakdown(
    history: History,
    tools: list[dict[str, object]],
    state: ContextState,
    count_text: TextCounter | None = None,
) -> Breakdown:
    """Split `state.tokens` over the kinds of content in `history` and `tools`."""
    raw = {"system": 0, "memory": 0, "tool_results": 0, "conversation": REPLY_PRIMING}
    for index, message in enumerate(history):
        tokens = history.message_tokens(index)
        if message["role"] == "system":
            raw["system"] += tokens
        elif is_memory(message) or is_summary(message) or is_notebook_state(message):
            raw["memory"] += tokens
        elif message["role"] == "tool":
            raw["tool_results"] += tokens
        else:
            raw["conversation"] += tokens
    raw["tools"] = count_tools_tokens(tools, count_text or estimate_tokens)
    total = sum(raw.values()) or 1
    scaled = {kind: round(value * state.tokens / total) for kind, value in raw.items()}
    free = max(0, state.thresholds.effective_window - state.tokens)
    return Breakdown(
        scaled["system"],
        scaled["tools"],
        scaled["memory"],
        scaled["tool_results"],
        scaled["conversation"],
        free,
        state,
    )
