"""Reading a magic's line the way the user typed it: options first, then the text.

`%chat what does ls -m print?` sends exactly "what does ls -m print?": the first word that
is not an option starts the text, `--` ends the options, and the text is kept verbatim (no
quote processing, no IPython variable expansion). argparse would read "-m print?" as an
option anywhere on the line; this reader never looks for options after the text starts.
Which options a magic takes is its row of `MAGIC_OPTIONS`, by the magic's name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from IPython.core.error import UsageError

_WORD = re.compile(r"\S+")


@dataclass(frozen=True)
class Option:
    """One option a magic takes: its spellings, and whether (and how) it takes a value."""

    names: tuple[str, ...]  # e.g. ("--model", "-m"); the first names the result's key
    value: str = "none"  # "none" (a flag), "required", or "optional" (`--resume [SESSION]`)
    integer: bool = False
    optional_value: re.Pattern[str] | None = None  # a word that is the optional value

    @property
    def key(self) -> str:
        return self.names[0].lstrip("-").replace("-", "_")


@dataclass
class Parsed:
    """The options given (by key: True for a flag, the value otherwise) and the text."""

    options: dict[str, str | int | bool] = field(default_factory=dict)
    text: str = ""

    def flag(self, key: str) -> bool:
        return bool(self.options.get(key, False))

    def value(self, key: str) -> str | None:
        found = self.options.get(key)
        return None if found is None or isinstance(found, bool) else str(found)


def parse_line(line: str, *, magic: str) -> Parsed:
    """Split `line` into the options before the text and the text itself (verbatim); the
    options are magic `magic`'s row of `MAGIC_OPTIONS`.

    A first word that starts with "-" and is no option is an error (with how to send it
    as text); once the text starts, nothing in it is read as an option.
    """
    by_name = {name: option for option in MAGIC_OPTIONS[magic] for name in option.names}
    parsed = Parsed()
    words = list(_WORD.finditer(line))
    index = 0
    while index < len(words):
        word = words[index].group(0)
        if word == "--":
            index += 1
            break
        if not word.startswith("-") or word == "-":
            break
        name, equals, inline = word.partition("=")
        option = by_name.get(name)
        if option is None:
            raise UsageError(
                f"%{magic}: unknown option {word!r}. Options go before the text; to send "
                f"text that starts with '-', put -- before it: %{magic} -- {word} …")
        index += 1
        if option.value == "none":
            if equals:
                raise UsageError(f"%{magic}: {name} takes no value")
            parsed.options[option.key] = True
            continue
        value: str | None = inline if equals else None
        if value is None and index < len(words):
            following = words[index].group(0)
            takes = option.value == "required" or (
                option.optional_value is not None and option.optional_value.fullmatch(following)
            ) or (option.value == "optional" and index == len(words) - 1
                  and not following.startswith("-"))
            if takes:
                value, index = following, index + 1
        if value is None:
            if option.value == "required":
                raise UsageError(f"%{magic}: {name} needs a value")
            parsed.options[option.key] = True
            continue
        if option.integer:
            try:
                parsed.options[option.key] = int(value)
            except ValueError:
                raise UsageError(f"%{magic}: {name} takes a number, not {value!r}") from None
        else:
            parsed.options[option.key] = value
    parsed.text = line[words[index].start():].strip() if index < len(words) else ""
    return parsed


# what `--resume` reads as its value: "latest", a number from `%chat --sessions`, a
# session id, an archive's path
SESSION_WORD = re.compile(r"latest|\d{1,4}|\d{8}-\d{6}-[0-9a-f]{6}|\S+\.jsonl|\S*/\S*")

# The options each magic takes, by the magic's name: the one table that the magic reads
# through `parse_line` and the docs' magics block prints. Every line magic of `ChatMagics`
# has a row (tests/notebook/test_parse.py fails for one without), `()` when it takes none.
MAGIC_OPTIONS: dict[str, tuple[Option, ...]] = {
    "chat": (
        Option(("--model", "-m"), "required"),
        Option(("--new",)),
        Option(("--no-tools",)),
        Option(("--cell",)),
        Option(("--resume",), "optional", optional_value=SESSION_WORD),
        Option(("--sessions",)),
        Option(("--help", "-h")),
    ),
    "compact": (Option(("--show",)), Option(("--undo",)), Option(("--preview",)),
                Option(("--help", "-h"))),
    "pin": (Option(("--list",)), Option(("--remove",), "required", integer=True),
            Option(("--help", "-h"))),
    "context": (Option(("--compactions",)), Option(("--help", "-h"))),
    "nbagent": (),  # its words are settings and subcommands: `_subcommands`' table
}
