"""Code into cells: code the model proposes becomes a new cell below the chat cell, through
the kernel's standard next-input payload (`shell.set_next_input(code, replace=False)`),
which JupyterLab and Notebook honour. The new cell is never run: the user reads it first.
A terminal (terminal IPython, jupyter console) would put it at the next prompt instead,
where one Enter runs it unread: there it is shown, exactly as it would run, to copy.
"""

from __future__ import annotations

import re
from typing import Any

from IPython.display import display

from nbagent.events import CellProposed
from nbagent.text import visible

from ._bundles import Bundle
from ._frontend import updates_in_place

_BLOCK = re.compile(r"^ {0,3}(`{3,}|~{3,})[^\n]*\n(.*?)^ {0,3}\1[`~]*[ \t]*$",
                    re.MULTILINE | re.DOTALL)
SHOWN = ("nbagent: {what}, not run — in a terminal it is not put at your prompt, where one "
         "Enter would run it unread; copy it from here:")


def last_code_block(markdown: str) -> str | None:
    """The last complete fenced code block of a reply, without its fences."""
    blocks = [match.group(2) for match in _BLOCK.finditer(markdown)]
    return blocks[-1].rstrip("\n") if blocks else None


def offer_cell(shell: Any, code: str, what: str = "the proposed cell") -> bool:
    """Put `code` where the user takes it as a cell: a new cell below where the front end
    makes one (True); elsewhere shown here, never at a prompt one Enter would run (False)."""
    setter = getattr(shell, "set_next_input", None)
    if setter is not None and updates_in_place(shell):
        setter(code, replace=False)
        return True
    display(shown_bundle(code, what), raw=True)
    return False


def shown_bundle(code: str, what: str) -> Bundle:
    """A proposal shown as text: every hidden character written `⟨U+XXXX⟩` where it
    stands (copied, it cannot run as something else than what was read)."""
    return {"text/plain": f"{SHOWN.format(what=what)}\n{visible(code)}"}


class CellProposals:
    """A subscriber for one chat cell: each `CellProposed` becomes the next input (or,
    in a terminal, is shown).

    The kernel keeps one next-input payload per execution, and each `CellProposed`
    carries the whole cell as it stands (several proposals of a turn already joined), so
    the latest replaces the earlier ones.
    """

    def __init__(self, shell: Any) -> None:
        self._shell = shell
        self.code: str | None = None
        self.below = False  # the latest proposal is a new cell below (not shown instead)

    def __call__(self, event: object) -> None:
        if isinstance(event, CellProposed) and event.code.strip():
            self.propose(event.code)

    def propose(self, code: str) -> None:
        self.code = code.strip("\n")
        self.below = offer_cell(self._shell, self.code)
