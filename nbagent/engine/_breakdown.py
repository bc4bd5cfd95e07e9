"""What fills the context window, by kind: the numbers behind the notebook's context table.

The system prompt (with pins) and the tool schemas are counted directly, with the same
counter every time, so they read the same in every state of a session and after a resume;
the rest of the context state's total is shared by the other kinds in proportion to their
counts. What is left is measured against the same base as the context state's percent left.
"""

from __future__ import annotations

from dataclasses import dataclass

from ._history import History
from ._markers import is_images, is_memory, is_note, is_notebook_state, is_summary
from ._thresholds import ContextState
from ._tokens import (
    REPLY_PRIMING,
    TextCounter,
    count_message_tokens,
    count_tools_tokens,
    estimate_tokens,
)


@dataclass(frozen=True)
class Breakdown:
    """Tokens by kind: `system` and `tools` counted as they are, the other kinds sharing
    the rest of `state.tokens`; `free` is what is left before `state`'s base (the
    auto-compact trigger while it is armed, else the effective window)."""

    system: int
    tools: int
    memory: int  # session memory, summaries, notebook state and notes: what nbagent wrote
    tool_results: int  # tool messages and the figures their round made
    conversation: int  # user and assistant messages, tool calls
    free: int  # left before the base `percent_left` is measured against
    state: ContextState
    tools_note: str = ""  # how the tool schemas were sized to the window ("": in full)

    @property
    def base(self) -> int:
        """The figure percent left and free are both measured against (`ContextState.base`)."""
        return self.state.base

    @property
    def free_percent(self) -> float:
        """`free` as a percentage of `base`: the context state's percent left."""
        return self.state.percent_left

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
    *,
    tools_tokens: int | None = None,
    tools_note: str = "",
) -> Breakdown:
    """Split `state.tokens` over the kinds of content in `history` and `tools`;
    `tools_tokens`: what the tools cost as the model is shown them, where that is not
    their JSON schemas (the embedded model's lean tool list); `tools_note`: how they were
    sized to the window."""
    counter = count_text or estimate_tokens
    system = sum(count_message_tokens(m, count_text=counter) for m in history
                 if m["role"] == "system")
    schemas = count_tools_tokens(tools, counter) if tools_tokens is None else tools_tokens
    raw = {"memory": 0, "tool_results": 0, "conversation": REPLY_PRIMING}
    for index, message in enumerate(history):
        tokens = history.message_tokens(index)
        if message["role"] == "system":
            continue
        if is_memory(message) or is_summary(message) or is_notebook_state(message) or \
                is_note(message):
            raw["memory"] += tokens
        elif message["role"] == "tool" or is_images(message):
            # a round's figures ride in a user message only because many providers take no
            # image in a tool message: they are tool output, cleared by L1 like one
            raw["tool_results"] += tokens
        else:
            raw["conversation"] += tokens
    rest = max(0, state.tokens - system - schemas)
    total = sum(raw.values()) or 1
    shares = {kind: value * rest / total for kind, value in raw.items()}
    scaled = _rounded(shares, rest)
    return Breakdown(system, schemas, scaled["memory"], scaled["tool_results"],
                     scaled["conversation"], max(0, state.base - state.tokens), state,
                     tools_note)


def _rounded(shares: dict[str, float], total: int) -> dict[str, int]:
    """Round `shares` so they add up to `total` exactly (largest remainders first)."""
    floors = {kind: int(value) for kind, value in shares.items()}
    left = total - sum(floors.values())
    for kind in sorted(shares, key=lambda k: floors[k] - shares[k])[:max(0, left)]:
        floors[kind] += 1
    return floors
