"""The events of the model's code runs and how the archive writes them: `CodeStarting` (its
`code_start` record, on disk before the code runs, so a run that kills the process is still
known) and `CodeRan` (its `code_run` record: the outcome, the text the model read and the
kinds of output shown — their text is in that text once, bounded). Apart from the tool so
the archive's table imports nothing that runs code.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# The outcomes a `code_run` record names beyond the run's own (`_code_exec.Status`).
NOT_RUN = "not run"  # its number was shown, the code was not run (declined, taken as a cell)
DETACHED = "detached"  # asked to stop, it went on: cut loose, still running unseen
NEVER_ENDED = "never ended"  # started and no outcome recorded: the process died during it


@dataclass(frozen=True)
class CodeStarting:
    """Run `number` of the model's code is about to start (written to disk first)."""

    number: int
    code: str


@dataclass(frozen=True)
class CodeRan:
    """The model's code ran (or was stopped, or not run at all): the archive keeps each
    with its code, its outcome, the text the model read and the kinds of output it showed
    (their text is in `text`; images are named by type, not kept). `detached`: it went on
    after it was asked to stop and was cut loose (this outcome came later, or is that)."""

    number: int
    code: str
    status: str  # ok, error, interrupted, exited, or NOT_RUN, DETACHED
    text: str  # what the model read
    outputs: tuple[dict[str, Any], ...]
    seconds: float
    detached: bool = False


def code_start_record(event: Any) -> dict[str, Any]:
    """The fields of the archive's `code_start` record of `event`."""
    return {"number": event.number, "code": event.code}


def code_run_record(event: Any) -> dict[str, Any]:
    """The fields of the archive's `code_run` record of `event` (redacted like every
    record when written)."""
    record = {"number": event.number, "code": event.code, "status": event.status,
              "text": event.text, "outputs": list(event.outputs), "seconds": event.seconds}
    if event.detached:
        record["detached"] = True
    return record
