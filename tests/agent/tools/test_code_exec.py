"""Running one piece of the model's code the way a cell runs (`nbagent.agent.tools._code_exec`):
`execute` never raises for what the code does (a syntax error, an interrupt are the run's
outcome), keeps the last expression's value, and reads a chained error as the code's own
traceback with one line per cause; `BoundedText` keeps the head and tail of what a run
prints and counts what it drops. Through the `run_code` tool: test_run_code."""

from __future__ import annotations

from typing import Any

from nbagent.code import BoundedText, execute


def test_bounded_text_counts_what_it_drops() -> None:
    sink = BoundedText(head=5, tail=5)
    for piece in ("abc", "defgh", "ijklmnop", "qrst"):
        sink.write(piece)
    assert sink.total == 20 and sink.cut == 10
    assert sink.text() == "abcde\n[… 10 characters not kept …]\npqrst"


def test_execute_never_raises_for_what_the_code_does() -> None:
    namespace: dict[str, Any] = {}
    assert execute("def f(:\n", namespace, "<t>").status == "error"
    assert execute("raise KeyboardInterrupt", namespace, "<t>").status == "interrupted"
    ran = execute("x = [1]\nx", namespace, "<t>")
    assert ran.status == "ok" and ran.value == [1] and ran.has_value
    assert not execute("x = 2", namespace, "<t>").has_value


def test_a_chained_error_reads_as_the_codes_traceback_and_one_line_per_cause() -> None:
    code = ("def lookup(table, key):\n"
            "    try:\n"
            "        return table[key]\n"
            "    except KeyError as missing:\n"
            "        raise ValueError(f'no column {key!r}') from missing\n"
            "lookup({}, 'revnue')")
    ran = execute(code, {}, "<agent run 1>")
    assert ran.status == "error" and ran.error_name == "ValueError"
    assert ran.error.count("Traceback (most recent call last)") == 1  # the cause's is not
    assert '<agent run 1>", line 6' in ran.error and "ValueError: no column 'revnue'" in ran.error
    assert ran.error.endswith("(raised while handling KeyError: 'revnue')")
