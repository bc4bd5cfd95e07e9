"""The notebook's words: the lines the magics show, and the translation from the Python
calls that the library's messages name ("run agent.compact()") to the magic a notebook
user types ("run %compact"). Only this room names magics; every error, stop and notice
text the notebook shows passes through `notebook_words`.
"""

from __future__ import annotations

import re
from collections.abc import Callable

INTERRUPTED = "interrupted — the session is intact"
INTERRUPTED_RETRY = f"{INTERRUPTED}; run the cell again to retry"
SMALL_MODEL_FOOTER = ("answered by SmolLM2-135M, a very small local model: expect weak answers "
                      "(%nbagent model=NAME for a stronger one)")
REPLACED = ("this cell's earlier exchange was replaced by this one "
            "(the earlier one stays in the archive)")
PROPOSED = "proposed a new cell below (not run: read it, then run it yourself)"
NO_CODE = "no code block in the reply, so no cell was proposed"
CELL_REQUEST = ("\n\n(Answer with the code for one new notebook cell, in a single fenced "
                "Python code block.)")
NOTHING_TO_SEND = "Nothing to send: write your message in the cell (or after %chat)."

_NAME = r"(?:\"([^\"]*)\"|'([^']*)'|([^\s(),'\"]+))"  # a quoted or bare argument
_Replace = Callable[[re.Match[str]], str]


def _argument(match: re.Match[str], first: int) -> str:
    return next((g for g in match.groups()[first:first + 3] if g is not None), "")


def _configure(match: re.Match[str]) -> str:
    words = []
    for part in match.group(1).split(","):
        key, sep, value = part.strip().partition("=")
        if not sep:
            return match.group(0)
        key = "window" if key.strip() == "max_context_tokens" else key.strip()
        words.append(f"{key}={value.strip().strip(chr(39) + chr(34))}")
    return "%nbagent " + " ".join(words)


def _compact(match: re.Match[str]) -> str:
    focus = _argument(match, 0)
    return f"%compact {focus}" if focus else "%compact"


# Longest, most specific first: each row is (a call in the library's words, the magic).
TRANSLATIONS: list[tuple[re.Pattern[str], str | _Replace]] = [
    (re.compile(r"nbagent\.new_session\(\s*builtin_tools\s*=\s*False\s*\)"),
     "%chat --new --no-tools"),
    (re.compile(r"nbagent\.new_session\(\s*\)"), "%chat --new"),
    (re.compile(r"nbagent\.reset\(\s*\)"), "%nbagent reset"),
    (re.compile(r"\bagent\.new_session\(\s*\)"), "%chat --new"),
    (re.compile(r"\bagent\.unpin\(\s*(\d+)\s*\)"),
     lambda m: f"%pin --remove {int(m.group(1)) + 1}"),  # %pin numbers from 1
    (re.compile(r"nbagent\.current\(\s*resume\s*=\s*[\"']latest[\"']\s*\)"), "%chat --resume"),
    (re.compile(r"nbagent\.current\(\s*resume\s*=\s*" + _NAME + r"\s*\)"),
     lambda m: f"%chat --resume {_argument(m, 0)}"),
    (re.compile(r"nbagent\.Agent\.sessions\(\s*\)"), "%chat --sessions"),
    (re.compile(r"nbagent\.find_local_models\(\s*\)"), "%nbagent models"),
    (re.compile(r"agent\.undo_compaction\(\s*\)"), "%compact --undo"),
    (re.compile(r"agent\.preview_compaction\(\s*\)"), "%compact --preview"),
    (re.compile(r"agent\.compact\(\s*(?:" + _NAME + r")?\s*\)"), _compact),
    (re.compile(r"agent\.configure\(([^()]*)\)"), _configure),
    (re.compile(r"agent\.use_model\(\s*" + _NAME + r"\s*\)"),
     lambda m: f"%nbagent model={_argument(m, 0)}"),
    (re.compile(r"agent\.breakdown\(\s*\)"), "%context"),
    (re.compile(r"agent\.mcp_servers\(\s*\)"), "%nbagent mcp list"),
    (re.compile(r"agent\.pins\(\s*\)"), "%pin --list"),
    (re.compile(r"agent\.approval\.revoke\(\.\.\.\)"), "%nbagent revoke …"),
]


def notebook_words(text: str) -> str:
    """`text` with every Python call it names spelt as the magic that does the same."""
    for pattern, replacement in TRANSLATIONS:
        text = pattern.sub(replacement, text)
    return text


def first_line(text: str) -> str:
    """The message's first non-empty line: a library error says what happened and the fix
    there; what follows (a provider's raw text) is detail, not for the cell."""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[0].strip() if lines else text.strip()
