"""What a delegated task (a branch: `_branch`) tells the session it ran in, as events on the
session's stream: it started, a step it took, each message of its own transcript (the
archive keeps them beside the session's, for recall), and how it ended — `Branch`, the
record the session keeps, bills and shows in `%context`. No logic here; no imports of the
session or the loop, so the archive's kinds table can name these events.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any


@dataclass(frozen=True)
class Branch:
    """One delegated task, as it ended.

    Args:
        number: its place among the session's branches (1 for the first).
        task: the task as the model handed it over.
        model: the model that worked on it.
        status: how it ended: `done`, `max_rounds`, `timeout`, `loop`, `handed_over` (the
            user took code as a cell), `interrupted` or `failed`.
        result: what returned to the main history (bounded).
        rounds: its rounds of tool calls.
        tool_calls: the tool calls it made.
        transcript_tokens: the tokens of every message its own history took in: what the
            main window would have held had the work been done there.
        returned_tokens: the tokens of the result that entered the main history.
        compactions: compactions of its own history.
        prompt_tokens: prompt tokens its requests were billed.
        output_tokens: output tokens its requests were billed.
        cost: what it cost (its requests and its summaries), in USD.
    """

    number: int
    task: str
    model: str
    status: str
    result: str
    rounds: int = 0
    tool_calls: int = 0
    transcript_tokens: int = 0
    returned_tokens: int = 0
    compactions: int = 0
    prompt_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0

    @property
    def kept_out(self) -> int:
        """Tokens its work kept out of the main window (its transcript less its result)."""
        return max(0, self.transcript_tokens - self.returned_tokens)

    def as_record(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> Branch | None:
        """The branch an archive record holds (None when it is not one: a damaged record)."""
        names = {f.name for f in fields(cls)}
        try:
            return cls(**{k: v for k, v in record.items() if k in names})
        except TypeError:
            return None


@dataclass(frozen=True)
class BranchStarted:
    """A delegated task started (`number` among the session's branches)."""

    number: int
    task: str
    model: str


@dataclass(frozen=True)
class BranchProgress:
    """Something branch `number` did, as the event its own stream carried: a `Status`
    ("thinking…"), a `ToolStarted` or `ToolFinished`, a `Compacted` of its own history,
    a `Retrying` (a display shows them as it shows the session's own)."""

    number: int
    event: object


@dataclass(frozen=True)
class BranchMessage:
    """A message joined branch `number`'s own history (the archive keeps its transcript)."""

    number: int
    message: dict[str, Any]


@dataclass(frozen=True)
class BranchFinished:
    """A branch ended; the session has counted its cost and tokens."""

    branch: Branch
