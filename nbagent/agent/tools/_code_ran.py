"""`CodeRan`, the event of one run of the model's code, and how the archive writes it
(its `code_run` record: the code, the outcome, the text the model read and the outputs'
text). Apart from the tool so the archive's table imports nothing that runs code.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class CodeRan:
    """The model's code ran (or was stopped): the archive keeps each run with its code,
    its outcome and its outputs (their text; images are named by type, not kept)."""

    number: int
    code: str
    status: str  # ok, error, interrupted, exited
    text: str  # what the model read
    outputs: tuple[dict[str, Any], ...]
    seconds: float


def code_run_record(event: Any) -> dict[str, Any]:
    """The fields of the archive's `code_run` record of `event` (redacted like every
    record when written)."""
    record = asdict(event)
    record["outputs"] = list(record["outputs"])
    return record
