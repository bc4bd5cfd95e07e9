"""The deterministic floor: what code keeps of the text a level removes, with no model —
the user's own words, paths, DataFrame, column and variable names, error lines and the
results the assistant reported (figures with their subject) — its token budget, and
reading it back from the placeholders, memory blocks and summaries it was written into
(so a merge or a later level keeps it). Writing it under its headings is `_floor_render`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .._markers import (
    ERRORS_HEADING,
    FOCUS_HEADING,
    NAMES_HEADING,
    RESULTS_HEADING,
    USER_MESSAGES_HEADING,
    is_memory,
    is_note,
    is_notebook_state,
    is_plain_user,
    is_snipped,
    is_summary,
)
from .._tokens import estimate_tokens
from . import _identifiers as ids
from ._error_lines import error_lines
from ._evidence import NOTES_ONLY_HEADING, fenced, read_notes_only, words
from ._identifiers import window
from ._render import content_text
from ._results import results_in
from ._results_kept import Outputs, marked
from ._results_kept import kept as kept_results
from ._users import decides, shorten_user_message

__all__ = ["Floor", "decides", "extract_floor", "floor_budget", "shorten_user_message"]

FLOOR_SHARE = 0.25  # of the auto-compact trigger: the most the floor may take ...
FLOOR_CAP = 2_000  # ... and never more than this (the cache-replay sweep: more costs more)
MIN_FLOOR_TOKENS = 200
DEFAULT_FLOOR_TOKENS = 6_000  # the cap when a level is not told its budget
MAX_NAMES = 400  # names considered before the budget (bounds the work)
MAX_ERRORS = 40
MAX_RESULTS = 60  # findings and computed ones first, then the latest

_FLOOR_START = re.compile(  # a floor starts at the first line that starts with a heading
    "^(?:" + "|".join(map(re.escape, (USER_MESSAGES_HEADING, NAMES_HEADING, ERRORS_HEADING,
                                      RESULTS_HEADING, FOCUS_HEADING,
                                      NOTES_ONLY_HEADING))) + ")",
    re.MULTILINE,
)


def floor_budget(trigger: int) -> int:
    """The floor's token budget for an auto-compact trigger: a share, so compaction shrinks."""
    return max(MIN_FLOOR_TOKENS, min(FLOOR_CAP, int(trigger * FLOOR_SHARE)))


def default_budget(total_tokens: int, carried: int = 0) -> int:
    """The budget when a level is not told one: a share of what it compacts, capped, and
    never less than the floors it carries over (`carried` tokens), so a later compaction
    does not shorten what an earlier one kept."""
    return min(DEFAULT_FLOOR_TOKENS, max(floor_budget(total_tokens), carried))


@dataclass(frozen=True)
class Floor:
    user_messages: tuple[str, ...]
    names: tuple[str, ...]  # paths first, then names with a role, then tokens seen in passing
    error_lines: tuple[str, ...]
    results: tuple[str, ...] = ()  # sentences the assistant reported figures in, in order
    # (a computed one marked: `_results_kept.COMPUTED`)

    def __add__(self, other: Floor) -> Floor:
        return Floor(
            _unique([*self.user_messages, *other.user_messages], keep_repeats=True),
            _unique([*self.names, *other.names]),
            _unique([*self.error_lines, *other.error_lines]),
            _unique([*self.results, *other.results]),
        )

    def without_known(self, known: Floor) -> Floor:
        """Drop the names, error lines and results `known` already keeps (user messages
        stay)."""
        names, errors, results = set(known.names), set(known.error_lines), set(known.results)
        return Floor(self.user_messages, tuple(n for n in self.names if n not in names),
                     tuple(e for e in self.error_lines if e not in errors),
                     tuple(r for r in self.results if r not in results))


EMPTY = Floor((), (), (), ())


def _unique(items: Iterable[str], keep_repeats: bool = False) -> tuple[str, ...]:
    if keep_repeats:  # consecutive repeats only ("continue", "continue")
        out: list[str] = []
        for item in items:
            if not out or out[-1] != item:
                out.append(item)
        return tuple(out)
    return tuple(dict.fromkeys(items))


def extract_floor(messages: Sequence[Mapping[str, Any]], focus: str | None = None) -> Floor:
    """The floor of `messages`: their user messages, names, error lines and reported
    results; the floors already written into memory blocks, summaries and placeholders
    are read back.

    A name only the assistant's prose shows (not its code, a tool result, a tool call or
    the user's words) is kept only if one of those holds it as a word: a model's prose
    names columns and variables that were never made, and the floor keeps real ones.
    The names a compaction's `focus` mentions come first, when they occur in `messages`
    (`focus_names`): "keep Visitor Rating and Country" keeps those two columns ahead of
    every other name, whatever summarizer writes the notes."""
    users: list[str] = []
    found: dict[str, int] = {}
    said: set[str] = set()  # names only the assistant's prose has shown so far
    seen: set[str] = set()  # the words of what the user, the code and the tools wrote
    errors: list[str] = []
    mentions: list[str] = []
    results: list[str] = []
    outputs = Outputs()  # what tools printed since the assistant last spoke

    def add(names: Iterable[ids.Found], evidence: bool = True) -> None:
        for name, priority in ids.clean(iter(names)):
            if evidence:
                said.discard(name)
            elif name not in found:
                said.add(name)
            if found.get(name, 99) > priority:
                found[name] = priority

    for message in messages:
        text = content_text(message.get("content"))
        role = message.get("role")
        if is_note(message):
            outputs.add(text)  # the outputs of cells the user ran
        if is_notebook_state(message) or is_note(message) or role == "system":
            continue  # kept as it is by every level; a note's names are the kernel's
        if is_memory(message) or is_summary(message) or (role == "tool" and is_snipped(text)):
            kept = kept_floor(text) if is_memory(message) else parse_floor(text)
            users += kept.user_messages
            seen.update(w for user in kept.user_messages for w in words(user))
            # names read back pass `ids.clean` again (in `add`): a rule about which names
            # are kept (a length bound, a shape) holds here too, or a name a first compaction
            # kept disappears at the second
            add((n, ids.PATH if ids.is_path(n) else ids.NAMED) for n in kept.names)
            errors += kept.error_lines
            results += kept.results
        elif is_plain_user(message):
            users.append(text)
            seen.update(words(text))
            add(ids.names_in_user_text(text))
        elif role == "tool":
            outputs.add(text)
            seen.update(words(text))
            add(ids.names_in_output(text))
            errors += error_lines(text)
        elif role == "assistant":
            code, prose = fenced(text)
            add(ids.names_in_code(code))
            add(ids.names_in_assistant_text(prose), evidence=False)
            mentions += error_lines(text, mentions=True)
            results += marked(results_in(text), outputs)
            if prose.strip():  # it spoke: what it reports next follows later outputs
                outputs.clear()
            for call in message.get("tool_calls") or ():
                arguments = str(call.get("function", {}).get("arguments", ""))
                seen.update(words(arguments))
                add(ids.names_in_arguments(arguments))
    # A capitals-only word only prose shows (FR, CA) is real when something names it, not
    # when it is merely a word of an output: a table's cells are values, not names.
    real = [name for name in found if name not in said
            or name in seen and not ids.is_capitals(name)]
    ranked = sorted(real, key=lambda name: found[name])  # stable: first seen first
    if focus:
        first = focus_names(focus, messages, set(found))
        ranked = [*first, *(name for name in ranked if name not in first)]
    return Floor(_unique(users, keep_repeats=True), tuple(ranked[:MAX_NAMES]),
                 _unique([*errors, *mentions])[:MAX_ERRORS],
                 tuple(kept_results(_unique(results), MAX_RESULTS)))


def focus_names(focus: str, messages: Sequence[Mapping[str, Any]],
                names: set[str]) -> list[str]:
    """The names `focus` mentions that `messages` hold: one their text shows as a name
    (`names`: what the floor found in them), or — several words, or quoted in the
    focus — that occurs in their text as it is, between word boundaries. A plain word
    found only as a word is not a name ("keep" is not; "Country", a column, is)."""
    texts = [window(content_text(m.get("content"))) for m in messages
             if m.get("role") != "system" and not is_notebook_state(m)]
    texts += [str(call.get("function", {}).get("arguments", "")) for m in messages
              for call in m.get("tool_calls") or ()]
    quoted = set(ids.quoted_in(focus))
    kept: list[str] = []
    for name in ids.names_in_focus(focus):
        if any(name in k.split() for k in kept if " " in k):
            continue  # a word of a longer name already kept: "Rating" of "Visitor Rating"
        if name in names or (" " in name or name in quoted) and any(
                re.search(rf"(?<![\w]){re.escape(name)}(?![\w])", text) for text in texts):
            kept.append(name)
    return kept


def digest(content: str, max_chars: int = 400) -> str:
    """A bounded digest of a tool result: the names and error lines it held."""
    names = [n for n, _ in sorted(ids.clean(ids.names_in_output(content)), key=lambda f: f[1])]
    kept: list[str] = []
    used = len(NAMES_HEADING)
    for name in dict.fromkeys(names):
        if used + len(name) + 2 > max_chars * 0.7:
            break
        kept.append(name)
        used += len(name) + 2
    lines = [f"{NAMES_HEADING} {', '.join(kept)}"] if kept else []
    errors = list(dict.fromkeys(error_lines(content)))[-2:]
    if errors:
        lines += [ERRORS_HEADING, *(f"- {e[: max_chars // 4]}" for e in errors)]
    return "\n".join(lines)


def parse_floor(text: str) -> Floor:
    """Read back a floor written by `render_floor` (anywhere in `text`)."""
    users: list[str] = []
    names: list[str] = []
    errors: list[str] = []
    results: list[str] = []
    section: list[str] | None = None
    for line in text.split("\n"):
        if line == USER_MESSAGES_HEADING:
            section = users
        elif line == ERRORS_HEADING:
            section = errors
        elif line == RESULTS_HEADING:
            section = results
        elif line.startswith(NAMES_HEADING):
            names += [n for n in line[len(NAMES_HEADING):].strip().split(", ") if n]
            section = None
        elif section is not None and line.startswith("- "):
            section.append(line[2:])
        elif section is users and users and line.startswith("  "):
            users[-1] += "\n" + line[2:]
        else:
            section = None
    return Floor(tuple(users), tuple(names), tuple(errors), tuple(results))


def notes_end(text: str) -> int:
    """Where the notes of a block end and its floor begins (the end of `text` if no floor)."""
    match = _FLOOR_START.search(text)
    return match.start() if match else len(text)


def names_shown(notes: str) -> tuple[str, ...]:
    """The names notes show (`ids.names_in_notes`), in order. A memory block does not
    print them again in its floor, and `kept_floor` reads them back from its notes by the
    same rule, so a merge or a later level that loses the notes still keeps the names."""
    return _unique(name for name, _ in ids.clean(ids.names_in_notes(notes)))


def kept_floor(text: str) -> Floor:
    """What a memory block keeps: its printed floor, and the names its notes show (paths
    first, as the floor ranks them) but those it lists as only the notes' own."""
    printed = parse_floor(text)
    invented = read_notes_only(text)
    names = _unique([*printed.names, *(n for n in names_shown(text[:notes_end(text)])
                                       if n not in invented)])
    return Floor(printed.user_messages, tuple(sorted(names, key=lambda n: not ids.is_path(n))),
                 printed.error_lines, printed.results)


def kept_tokens(text: str) -> int:
    """Tokens of the floor budget a memory block uses: its printed floor, and the names
    its notes show in its place (`kept_floor` keeps both)."""
    invented = read_notes_only(text)
    return floor_tokens(text) + sum(name_cost(n) for n in names_shown(text[:notes_end(text)])
                                    if n not in invented)


def name_cost(name: str) -> int:
    return estimate_tokens(name) + 1


def floor_tokens(text: str) -> int:
    """Tokens a block spends on its floor (from the first floor heading on), less its
    results (they have their own share, on top)."""
    start = notes_end(text)
    if start >= len(text):
        return 0
    if text.startswith(f"{RESULTS_HEADING}\n", start):
        return 0
    results = text.find(f"\n{RESULTS_HEADING}\n", start)
    return estimate_tokens(text[start:results if results >= 0 else len(text)])
