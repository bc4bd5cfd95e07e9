"""Fakes that ship with nbagent, for your tests and ours: `ScriptedModel` and
`ScriptedSummarizer` replay a script and record every call (same interface as the model
seam). Re-exported from the agent's models folder."""

from __future__ import annotations

from .agent.models._scripted import (
    ModelStep,
    ProviderError,
    ScriptedModel,
    ScriptedSummarizer,
    Step,
    calls,
    offline_analyst,
    provider_error,
    reply,
)

__all__ = [
    "ModelStep",
    "ProviderError",
    "ScriptedModel",
    "ScriptedSummarizer",
    "Step",
    "calls",
    "offline_analyst",
    "provider_error",
    "reply",
]
