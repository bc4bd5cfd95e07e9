"""`Decision`: the record every compaction controller call returns — what ran, why,
tokens before and after, summarizer calls, time and cost. A pydantic model, because
the archive stores it and the notebook's list of compactions reads it back. Its words
(`Decision.words`, `Decision.left_view_words`) are put here once: the notebook's line and
meter and the demo all say a decision with them.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

Trigger = Literal["auto", "midloop", "manual", "overflow"]
Action = Literal["none", "skipped", "compacted", "failed"]
MAX_FAILURES = 3  # consecutive failed compactions that open the circuit breaker


class Decision(BaseModel):
    """What one controller call did, and why. Every controller call returns one."""

    model_config = ConfigDict(frozen=True)

    action: Action
    trigger: Trigger
    levels: list[str]
    reason: str
    tokens_before: int
    tokens_after: int
    threshold: int
    changed: bool
    summary_calls: int = 0
    duration_s: float = 0.0
    cost: float | None = None
    failures: int = 0
    breaker_open: bool = False
    focus: str | None = None
    summary: str | None = None
    left_view: str | None = None  # one line: what left the model's view, how to get it back
    undone: bool = False  # `controller.undo()` put the history back as it was before

    def words(self, *, brief: bool = False, trigger: bool = False) -> str:
        """One line for this decision: "compacted (L2 memory): 1,972 → 1,463 tokens,
        1 summarizer call" (" — undone" once undone), or why nothing was compacted, or why it
        failed. `trigger` names what asked ("manual compaction compacted (…"); `brief` is
        the meter's "L2 memory: 1,972 → 1,463" ("(undone)" once undone)."""
        levels = " → ".join(self.levels)
        if brief:
            text = f"{levels}: {self.tokens_before:,} → {self.tokens_after:,}"
            return f"{text} (undone)" if self.undone else text
        asked = f"{self.trigger} " if trigger else ""
        if self.action == "compacted":
            plural = "" if self.summary_calls == 1 else "s"
            calls = f"{self.summary_calls:,} summarizer call{plural}"
            undone = " — undone" if self.undone else ""
            return (f"{asked}{'compaction ' if trigger else ''}compacted ({levels}): "
                    f"{self.tokens_before:,} → {self.tokens_after:,} tokens, {calls}{undone}")
        if self.action == "failed":
            return (f"{asked}compaction failed: {self.reason} — the history is unchanged "
                    f"({self.tokens_before:,} tokens)")
        head = f"{asked}compaction: nothing compacted" if trigger else "nothing compacted"
        return f"{head}: {self.reason} ({self.tokens_before:,} tokens)"

    def left_view_words(self) -> str:
        """What left the model's view and how to bring it back ("" when nothing did, or
        the compaction was undone: then it is all back)."""
        if not self.changed or self.undone:
            return ""
        return self.left_view or ""
