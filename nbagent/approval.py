"""Asking the user before something from outside acts (an MCP tool call now; the same
mechanism for any action that needs a yes): `Approval` holds what the user allowed and how
to ask; `Agent.approval` is the agent's. Re-exported from the agent room, where it lives.
"""

from __future__ import annotations

from .agent._approval import Approval, ApprovalRequest, NoOneToAsk, Verdict, ask_with_input

__all__ = ["Approval", "ApprovalRequest", "NoOneToAsk", "Verdict", "ask_with_input"]
