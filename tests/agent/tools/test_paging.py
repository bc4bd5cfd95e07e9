"""The size of one page a paging tool returns (`nbagent.agent.tools._paging`): bounded in
characters, in UTF-8 bytes and in lines at once, whichever stops it first (a page the line
bound stops ends after its last whole line), and a cut page says how much was left out and
how to read on. The tools' own pages: test_builtin (read_output, recall), test_files."""

from __future__ import annotations

import pytest

from nbagent.agent.tools import PageBounds, bounded

SMALL = PageBounds(chars=100, bytes=40, lines=3)


@pytest.mark.parametrize(("text", "fits"), [
    ("x" * 500, 40),  # ASCII: the byte bound (40) before the character bound (100)
    ("\u00e9" * 500, 20),  # two bytes each
    ("\U0001f600" * 500, 10),  # four bytes each
    ("a\nb\nc\nd\ne\n", 6),  # three whole lines, ended by their newline
    ("short", 5),
], ids=["ascii", "two-byte", "four-byte", "lines", "fits-whole"])
def test_a_page_is_the_longest_prefix_within_every_bound(text: str, fits: int) -> None:
    page = bounded(text, SMALL)
    if fits == len(text):
        assert page == text
    else:
        assert page.startswith(f"{text[:fits]}\n[page cut at {fits:,} of {len(text):,} ")
        assert not page.startswith(text[:fits + 1])


def test_the_character_bound_stops_a_page_of_narrow_text() -> None:
    wide = PageBounds(chars=100, bytes=1_000, lines=10)
    assert bounded("y" * 500, wide).startswith("y" * 100 + "\n[page cut at 100 of 500 ")
    assert PageBounds(chars=100).clamp_chars(10**9) == 100
    assert PageBounds(chars=100).clamp_chars(-5) == 1


def test_a_cut_page_says_how_much_was_left_out_and_how_to_read_on() -> None:
    assert bounded("short", SMALL) == "short"
    page = bounded("z" * 90, SMALL, how_to_continue="Page on with offset.")
    assert page == ("z" * 40 + "\n[page cut at 40 of 90 characters (at most 100 characters, "
                    "40 bytes, 3 lines a page). Page on with offset.]")
