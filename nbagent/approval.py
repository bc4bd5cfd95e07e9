"""Asking the user before something from outside acts — the model's code, an MCP tool
call — through one mechanism: `ANSWERS` (the one table of what the user may answer), an
`ApprovalRequest` per action (its question shows the action exactly), and `Approval`,
what the user allowed (`allowed`, `revoke`) and the one place that asks (`decide`);
`Agent.approval` is the agent's. Re-exported from the agent room, where it lives.
"""

from __future__ import annotations

from .agent._approval import (
    ANSWERS,
    CODE_ANSWERS,
    CODE_SCOPE,
    MAX_ASKS,
    MCP_ANSWERS,
    UNANSWERED,
    Approval,
    ApprovalRequest,
    Choice,
    Verdict,
    outcome_note,
    scope_words,
)
from .agent._asking import NoOneToAsk, ask_with_input

__all__ = [
    "ANSWERS",
    "CODE_ANSWERS",
    "CODE_SCOPE",
    "MAX_ASKS",
    "MCP_ANSWERS",
    "UNANSWERED",
    "Approval",
    "ApprovalRequest",
    "Choice",
    "NoOneToAsk",
    "Verdict",
    "ask_with_input",
    "outcome_note",
    "scope_words",
]
