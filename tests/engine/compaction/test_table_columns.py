"""The columns of printed tables are read line by line, whatever lines lie between."""

from __future__ import annotations

from nbagent.engine.compaction._identifiers import clean, names_in_output


def test_a_table_is_read_line_by_line_whatever_the_line_breaks() -> None:
    table = "region  units\n\x0b\n\n  \t\nnorth   12\nsouth   7"  # blank-ish lines between
    assert {"region", "units"} <= {n for n, _ in clean(names_in_output(table))}
