"""Error lines: exception lines and lines that start like an error, nothing else."""

from __future__ import annotations

from nbagent.engine.compaction._error_lines import error_lines
from tests.engine.compaction.sessions import (
    TRACEBACK,
)


def test_error_lines_are_exception_and_error_lines_only() -> None:
    text = TRACEBACK + "\nERROR: disk quota exceeded\nwarning text\nValueError: bad 'x'"
    assert error_lines(text) == ["KeyError: 'dosage_mg'", "ERROR: disk quota exceeded",
                                 "ValueError: bad 'x'"]
