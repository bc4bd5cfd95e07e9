"""What a model served on this machine's CPU is shown and what a summary costs it: why
the bundled small model is offered the built-in tools only when asked for, how the embedded
server samples, a summary's output bound, and the `SummaryCost` the compaction ladder
weighs a summarizer call by. The embedded model and the served model (`_embedded`,
`_local_model`, `_local_server`) read it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ...engine._markers import is_plain_user
from ...engine._questions import SummaryCost

# A summary on a CPU-served model takes about as long as a reply: a compaction makes one
# call at most (no retry, no merge call), and only when it frees at least this share of
# the window (the "3% of the window for 91 s" a %compact once cost); below it the
# deterministic floor does the work, or nothing does.
LOCAL_SUMMARY_SAVING = 0.15
SUMMARY_TOKENS = 320  # a summary's output bound on a local model: shorter than a reply
# The bundled 135M model hides the built-in tools unless the turn asks for one by name
# (the user's message names it, or a forced tool choice): offered every time, it called
# list_variables before every answer and then described the tool's output instead of
# answering (its notebook state already lists the variables and their columns), and it
# ran made-up code, read made-up paths, recalled nothing useful, delegated to itself. A
# model says so (`hides_builtins`); which tools are the built-ins is the agent's table's
# to say (it sets the model's `skips`, `agent/_model_traits.told_builtins`): the models
# room knows no tool, and a new built-in is hidden with no second place to add it.
# How the embedded server samples a reply. Greedy decoding (temperature 0) gave nine of
# ten different questions the same canned sentence; these, with a seed the chat handler
# derives from the prompt itself (the same request, the same reply; another question,
# another draw), gave ten different answers — bench/embedded_answers.py, docs/models.md.
DECODING = {"temperature": 0.4, "top_p": 0.9, "repeat_penalty": 1.15}


def summary_tokens(max_output: int | None) -> int:
    """The output bound of one summary on a local model (never over its reply cap)."""
    return min(SUMMARY_TOKENS, max_output or SUMMARY_TOKENS)


def local_summary_cost(max_output: int | None) -> SummaryCost:
    """What a summary costs a model served on this machine's CPU (see
    `LOCAL_SUMMARY_SAVING`); its output is bounded (`summary_tokens`)."""
    return SummaryCost(min_saving=LOCAL_SUMMARY_SAVING, max_calls=1,
                       output_tokens=summary_tokens(max_output))


_WORD = re.compile(r"[A-Za-z_]\w*")


def asked_for(messages: Sequence[Mapping[str, Any]], tool_choice: Any = None) -> set[str]:
    """The tool names this turn asks for: the words of the user's latest message, and the
    tool a forced `tool_choice` names."""
    asked: set[str] = set()
    if isinstance(tool_choice, dict):
        asked.add(str(tool_choice.get("function", {}).get("name", "")))
    latest = next((m for m in reversed(messages) if is_plain_user(m)), None)
    content = latest.get("content") if latest is not None else None
    if isinstance(content, str):
        asked.update(_WORD.findall(content))
    return asked
