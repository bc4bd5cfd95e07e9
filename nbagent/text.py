"""Text from outside made inert for a reader: `terminal_text` (no control sequence a
terminal would act on), `strip_hidden` (nor an invisible character) and `visible` (every
such character written where it stands, for what the user approves; `hidden_in` names
them). Re-exported from the agent room, where they live."""

from __future__ import annotations

from .agent._inert_text import hidden_in, strip_hidden, terminal_text, visible

__all__ = ["hidden_in", "strip_hidden", "terminal_text", "visible"]
