"""What a model served on this machine's CPU is shown and what a summary costs it: the
built-in tools the bundled small model is not offered, a summary's output bound, and the
`SummaryCost` the compaction ladder weighs a summarizer call by. The embedded model and
the served model (`_embedded`, `_local_model`) both read it.
"""

from __future__ import annotations

from ...engine._questions import SummaryCost

# A summary on a CPU-served model takes about as long as a reply: a compaction makes one
# call at most (no retry, no merge call), and only when it frees at least this share of
# the window (the "3% of the window for 91 s" a %compact once cost); below it the
# deterministic floor does the work, or nothing does.
LOCAL_SUMMARY_SAVING = 0.15
SUMMARY_TOKENS = 320  # a summary's output bound on a local model: shorter than a reply
# Built-in tools the bundled 135M model cannot use well (it runs made-up code, reads made-up
# paths, recalls nothing useful, delegates to itself); not offered to it, so its window goes
# to the chat.
SMALL_MODEL_SKIPS = frozenset({"run_code", "python", "read_file", "read_output", "recall",
                               "delegate", "compact_context"})


def summary_tokens(max_output: int | None) -> int:
    """The output bound of one summary on a local model (never over its reply cap)."""
    return min(SUMMARY_TOKENS, max_output or SUMMARY_TOKENS)


def local_summary_cost(max_output: int | None) -> SummaryCost:
    """What a summary costs a model served on this machine's CPU (see
    `LOCAL_SUMMARY_SAVING`); its output is bounded (`summary_tokens`)."""
    return SummaryCost(min_saving=LOCAL_SUMMARY_SAVING, max_calls=1,
                       output_tokens=summary_tokens(max_output))
