"""A magic's line as typed (`widgets/_parse.py`): options only before the text, each read
with its value (`-m NAME`, `--model=NAME`, `--resume [SESSION]`), `--` ending them, and the
text kept verbatim. (The same through a real shell: test_typing.py.)"""

from __future__ import annotations

import pytest
from nbagent.widgets._parse import CHAT_OPTIONS, parse_line


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
    parsed = parse_line(line, CHAT_OPTIONS, magic="chat")
    assert (parsed.options, parsed.text) == (options, text)
