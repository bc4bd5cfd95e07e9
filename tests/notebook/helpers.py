"""Helpers of the notebook tests: a scripted session made current, and what a cell shows."""

from __future__ import annotations

from typing import Any

import nbagent
from nbagent import Agent, Settings
from nbagent.testing import ScriptedModel, ScriptedSummarizer
from tests.helpers import nine_sections


def session(
    model: ScriptedModel, summarize: ScriptedSummarizer | None = None, *,
    kind: type[Agent] = Agent, **options: Any
) -> Agent:
    settings = options.pop("settings", Settings(max_context_tokens=8_192))
    agent = kind(
        model=model,
        settings=settings,
        namespace=options.pop("namespace", {}),
        summarize=summarize or ScriptedSummarizer(default=nine_sections()),
        **options,
    )
    return nbagent.set_current(agent)


def shown(captured: Any) -> list[dict[str, Any]]:
    """What the cell shows after these messages: each output in order, with updates
    applied to every output of the same display id; empty outputs left out."""
    outputs: list[tuple[str | None, dict[str, Any]]] = []
    for output in captured.outputs:
        display_id = (output.transient or {}).get("display_id")
        if output.update:
            outputs = [(i, output.data if i == display_id else d) for i, d in outputs]
        else:
            outputs.append((display_id, output.data))
    return [data for _, data in outputs if any(data.values())]


def plain(captured: Any) -> list[str]:
    return [str(data.get("text/plain", "")) for data in shown(captured)]
