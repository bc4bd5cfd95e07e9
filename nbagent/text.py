"""Text for a reader, one answer for every room. Text from outside made inert:
`terminal_text` (no control sequence a terminal would act on), `strip_hidden` (nor an
invisible character) and `visible` (every such character written where it stands, for
what the user approves; `hidden_in` names them) — from the agent room. And our own
figures, each written one way: `money`, `percent`, `tokens` (`count` for the number alone)
and `tool_call`, a call on one line — from the engine. Re-exported from where they live."""

from __future__ import annotations

from .agent._inert_text import hidden_in, strip_hidden, terminal_text, visible
from .engine._figures import count, money, percent, tokens, tool_call

__all__ = ["count", "hidden_in", "money", "percent", "strip_hidden", "terminal_text",
           "tokens", "tool_call", "visible"]
