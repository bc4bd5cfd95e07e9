"""Text from outside made inert for a reader: `terminal_text` (no control sequence a
terminal would act on) and `strip_hidden` (nor an invisible character). Re-exported from
the agent room, where they live."""

from __future__ import annotations

from .agent._inert_text import strip_hidden, terminal_text

__all__ = ["strip_hidden", "terminal_text"]
