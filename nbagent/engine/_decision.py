"""`Decision`: the record every compaction controller call returns — what ran, why,
tokens before and after, summarizer calls, time and cost. A pydantic model, because
the archive stores it and the notebook's list of compactions reads it back. Its words
(`Decision.words`, `Decision.left_view_words`) are put here once: the notebook's line and
meter and the demo all say a decision with them.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from . import _figures as figures

Trigger = Literal["auto", "midloop", "manual", "overflow"]
Action = Literal["none", "skipped", "compacted", "failed"]
MAX_FAILURES = 3  # consecutive failed compactions that open the circuit breaker


# When each trigger compacts, in words (`Decision.words(trigger=True)`: the demo's lines)
TRIGGER_WORDS = {"auto": "at the auto-compact trigger", "midloop": "mid-turn",
                 "manual": "on request", "overflow": "after the server's \"prompt too long\""}


class Decision(BaseModel):
    """What one controller call did, and why. Every controller call returns one."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    # each field's words are its `description`: docs/configuration.md's "decision fields"
    # table is printed from them (tests/docs_blocks.py), and a field without one fails there
    action: Action = Field(description="what the call did")
    trigger: Trigger = Field(
        description="what asked for it: a turn boundary, mid-loop, you, or an overflow error")
    levels: list[str] = Field(
        description="the ladder's levels that ran, in order (`L1 snip`, `L2 memory`, ...)")
    reason: str = Field(description="why it did that (or why it did nothing), in words")
    tokens_before: int = Field(description="the history's tokens before")
    tokens_after: int = Field(description="... and after")
    threshold: int = Field(description="the trigger it was measured against")
    changed: bool = Field(description="whether the history was rewritten")
    summary_calls: int = Field(0, description="calls to the summarizing model")
    duration_s: float = Field(0.0, description="seconds it took")
    cost: float | None = Field(None, description="what its summarizer calls cost, when known")
    failures: int = Field(0, description="consecutive failed compactions after it (three open "
                                         "the circuit breaker)")
    breaker_open: bool = Field(False,
                               description="whether the circuit breaker is open after it")
    focus: str | None = Field(
        None, description="the focus instructions a manual compaction was given "
                          "(`agent.compact(focus=...)`)")
    summary: str | None = Field(None, description="the summary it wrote, if a model level ran")
    left_view: str | None = Field(
        None, description="one line: what left the model's view and how to get it back")
    undone: bool = Field(False, description="`agent.undo_compaction()` put the history back "
                                            "as it was before")
    degraded: bool = Field(False, description="it compacted, but the summarizer failed and the "
                                              "deterministic floor stood in: counted as a failure")

    def words(self, *, brief: bool = False, trigger: bool = False) -> str:
        """One line for this decision: "compacted (L2 memory): 1,972 → 1,463 tokens,
        1 summarizer call" (" — undone" once undone), or why nothing was compacted, or why it
        failed. `trigger` says when, after the verb ("compacted on request (…",
        `TRIGGER_WORDS`); `brief` is the meter's "L2 memory: 1,972 → 1,463" ("(undone)"
        once undone)."""
        levels = " → ".join(self.levels)
        if brief:
            text = f"{levels}: {figures.count(self.tokens_before)} → " \
                f"{figures.count(self.tokens_after)}"
            return f"{text} (undone)" if self.undone else text
        when = f" {TRIGGER_WORDS.get(self.trigger, self.trigger)}" if trigger else ""
        if self.action == "compacted":
            plural = "" if self.summary_calls == 1 else "s"
            calls = f"{figures.count(self.summary_calls)} summarizer call{plural}"
            undone = " — undone" if self.undone else ""
            # it counts against the breaker: said, or "failures now 1" comes from nowhere
            stood_in = (f"; the summary was not usable, the deterministic floor stood in "
                        f"(failures in a row: {self.failures})" if self.degraded else "")
            return (f"compacted{when} ({levels}): "
                    f"{figures.count(self.tokens_before)} → "
                    f"{figures.tokens(self.tokens_after)}, {calls}{stood_in}{undone}")
        if self.action == "failed":
            return (f"compaction failed{when}: {self.reason} — the history is unchanged "
                    f"({figures.tokens(self.tokens_before)})")
        return f"nothing compacted{when}: {self.reason} ({figures.tokens(self.tokens_before)})"

    def left_view_words(self) -> str:
        """What left the model's view and how to bring it back ("" when nothing did, or
        the compaction was undone: then it is all back)."""
        if not self.changed or self.undone:
            return ""
        return self.left_view or ""
