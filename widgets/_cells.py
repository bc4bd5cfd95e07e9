"""Code into cells: code the model proposes becomes a new cell below the chat cell, through
the kernel's standard next-input payload (`shell.set_next_input(code, replace=False)`),
which JupyterLab and Notebook honour. The new cell is never run: the user reads it first.
"""

from __future__ import annotations

import re
from typing import Any

from nbagent.events import CellProposed

_BLOCK = re.compile(r"^ {0,3}(`{3,}|~{3,})[^\n]*\n(.*?)^ {0,3}\1[`~]*[ \t]*$",
                    re.MULTILINE | re.DOTALL)


def last_code_block(markdown: str) -> str | None:
    """The last complete fenced code block of a reply, without its fences."""
    blocks = [match.group(2) for match in _BLOCK.finditer(markdown)]
    return blocks[-1].rstrip("\n") if blocks else None


class CellProposals:
    """A subscriber for one chat cell: each `CellProposed` becomes the next input.

    The kernel keeps one next-input payload per execution, and each `CellProposed`
    carries the whole cell as it stands (several proposals of a turn already joined), so
    the latest replaces the earlier ones.
    """

    def __init__(self, shell: Any) -> None:
        self._shell = shell
        self.code: str | None = None

    def __call__(self, event: object) -> None:
        if isinstance(event, CellProposed) and event.code.strip():
            self.propose(event.code)

    def propose(self, code: str) -> None:
        self.code = code.strip("\n")
        setter = getattr(self._shell, "set_next_input", None)
        if setter is not None:
            setter(self.code, replace=False)
