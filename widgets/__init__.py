"""nbagent.widgets: the notebook UI — the live context meter and the chat display.

Shipped inside the wheel as `nbagent.widgets`; the source folder is `widgets/`.
Thin by design: traits and rendering only, fed by the agent's events.
"""

from __future__ import annotations

from ._chat import ChatDisplay, show_breakdown, show_decision, show_error
from ._meter import ContextMeter

__all__ = ["ChatDisplay", "ContextMeter", "show_breakdown", "show_decision", "show_error"]
