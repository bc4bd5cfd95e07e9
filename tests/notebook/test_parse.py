"""A magic's line as typed (`widgets/_parse.py`): options only before the text, each read
with its value (`-m NAME`, `--model=NAME`, `--resume [SESSION]`), `--` ending them, and the
text kept verbatim; and every magic reads its options from one table, `MAGIC_OPTIONS`.
(The same through a real shell: test_typing.py.)"""

from __future__ import annotations

import pytest
from nbagent.widgets import MAGIC_OPTIONS, ChatMagics, parse_line


@pytest.mark.parametrize(
    ("line", "options", "text"),
    [
        ("-m openai/gpt-4o what does -m mean?", {"model": "openai/gpt-4o"}, "what does -m mean?"),
        ("--model=local --new hi", {"model": "local", "new": True}, "hi"),
        ("--resume", {"resume": True}, ""),
        ("--resume 20261201-093608-abc123", {"resume": "20261201-093608-abc123"}, ""),
        ("--resume what now", {"resume": True}, "what now"),
        ("--cell -- --cell is text", {"cell": True}, "--cell is text"),
    ],
    ids=["short-model", "inline-value", "resume-latest", "resume-id", "resume-and-text",
         "flag-then-text"],
)
def test_options_before_the_text(line: str, options: dict[str, object], text: str) -> None:
    parsed = parse_line(line, magic="chat")
    assert (parsed.options, parsed.text) == (options, text)


def test_every_magic_has_its_row_of_options_and_no_row_is_left_over() -> None:
    # a magic without a row (or a row under another name) would parse with no options and
    # the docs' magics block would print none: both read MAGIC_OPTIONS by the magic's name
    assert set(MAGIC_OPTIONS) == set(ChatMagics.magics["line"])
    for magic, options in MAGIC_OPTIONS.items():
        if options:  # a magic that reads options answers --help
            assert parse_line("--help", magic=magic).flag("help"), magic
