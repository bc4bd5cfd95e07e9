"""The note of the cells the user ran: each part cut head and tail, the newest cells
first in line for the room, older ones counted, code in fences that `{name}` expansion
leaves alone."""

from __future__ import annotations

from nbagent.agent.tools import expand_cell_references
from nbagent.code import RanCell, cells_note


def test_no_cells_no_note() -> None:
    assert cells_note([]) is None


def test_a_cell_shows_code_printed_value_and_error_in_order() -> None:
    note = cells_note([RanCell(3, "x = 1\nprint(x)\nx", printed="1\n", value="1"),
                       RanCell(4, "1/0", error="ZeroDivisionError: division by zero")])
    assert note is not None
    assert note.index("In [3]") < note.index("printed:") < note.index("In [4]")
    assert "ZeroDivisionError" in note and "(no output)" not in note
    assert cells_note([RanCell(5, "y = 2")]).count("(no output)") == 1  # type: ignore[union-attr]


def test_long_parts_are_cut_and_old_cells_give_way_to_new_ones() -> None:
    flood = "".join(f"line {i}\n" for i in range(5_000))
    cells = [RanCell(n, f"step_{n}()", printed=flood) for n in range(1, 30)]
    note = cells_note(cells, limit=8_000)
    assert note is not None and len(note) <= 8_000
    assert "line 0" in note and "line 4999" in note and "characters cut" in note
    assert "In [29]" in note and "In [1]:" not in note
    assert "earlier cell(s) not shown" in note


def test_code_in_the_note_is_not_expanded_as_a_reference() -> None:
    note = cells_note([RanCell(1, "print(f'{secret}')")])
    assert note is not None
    assert expand_cell_references(note, {"secret": "hunter2"}) == note


def test_a_secret_a_cell_printed_is_redacted() -> None:
    key = "sk-proj-" + "a1B2c3D4e5F6g7H8i9J0" * 3
    note = cells_note([RanCell(1, "print(key)", printed=key)])
    assert note is not None and key not in note and "[redacted]" in note
