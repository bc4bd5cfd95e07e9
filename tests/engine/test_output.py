"""Tool output capped on arrival (`cap_output`): short text unchanged; a long one keeps its
head and tail, cut at a line break when one is near, around a marker that counts what was
omitted and, given a reference, says how to read it back from where the head ends. The cap
scales with the window but never below its floor (`output_cap`)."""

from __future__ import annotations

from nbagent.engine import MIN_CAP_CHARS, cap_output, output_cap


def test_short_text_is_unchanged() -> None:
    assert cap_output("df.shape == (3, 2)", 100) == "df.shape == (3, 2)"


def test_a_long_text_keeps_head_and_tail_at_line_breaks_and_counts_the_rest() -> None:
    lines = [f"row {i:04d}: " + "x" * 40 for i in range(500)]
    text = "\n".join(lines)
    capped = cap_output(text, 2_000)
    head, _, rest = capped.partition("[... ")
    marker, _, tail = rest.partition(" ...]\n")
    assert head.startswith("row 0000") and head.endswith("\n")  # whole lines only
    assert tail.endswith(lines[-1]) and tail.startswith("row ")
    omitted = len(text) - len(head) - len(tail)
    assert marker == f"{omitted:,} of {len(text):,} characters omitted"
    assert len(head) <= 0.6 * 2_000 < len(head) + len(lines[0]) + 1  # about 60% is head


def test_with_a_reference_the_marker_says_where_to_read_on() -> None:
    text = "a" * 10_000
    capped = cap_output(text, 1_000, ref="call_7")
    assert capped.startswith("a" * 600 + "[... 9,000 of 10,000 characters omitted; ")
    assert 'read them with read_output(ref="call_7", offset=600) ...]' in capped
    assert capped.endswith("\n" + "a" * 400)
    assert cap_output(text, 1_000) == cap_output(text, 1_000)  # deterministic


def test_the_cap_scales_with_the_window_but_keeps_its_floor() -> None:
    assert output_cap(40_000, 1.0) == 40_000 and output_cap(40_000, 0.25) == 10_000
    assert output_cap(40_000, 0.01) == MIN_CAP_CHARS
