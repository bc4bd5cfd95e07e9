"""Every line's bundle (`widgets/_bundles.py`): its text/plain free of terminal control
sequences, whatever the model or a tool wrote, and a short text never cut."""

from __future__ import annotations

import json
import re

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output
from nbagent.widgets import ChatDisplay, clean_cut

from nbagent import ChatResult
from nbagent.events import ToolFinished, ToolStarted
from nbagent.text import terminal_text


@pytest.mark.parametrize(("text", "shown"), [
    ("\x1b[31mred\x1b[0m", "red"),
    ("title\x1b]0;pwned\x07", "title"),
    ("\x1b]8;;https://evil.example\x1b\\click\x1b]8;;\x1b\\", "click"),
    ("over\rwrite", "overwrite"),
    ("line\r\nnext", "line\nnext"),
    ("csi\x9b2J8-bit", "csi8-bit"),  # the 8-bit CSI goes whole, as the 7-bit one
    ("bell\x07 back\x08space del\x7f", "bell backspace del"),
    ("keep\ttabs\nand lines", "keep\ttabs\nand lines"),
    ("\x1bPdcs string\x1b\\after", "after"),
    ("reset\x1bc", "reset"),
    ("unicode é ü 世界 ✓", "unicode é ü 世界 ✓"),
], ids=["csi-colour", "osc-title", "osc-hyperlink", "carriage-return", "crlf", "c1-csi",
        "c0-controls", "tab-newline", "dcs", "reset", "unicode"])
def test_terminal_text_keeps_no_control_sequence(text: str, shown: str) -> None:
    assert terminal_text(text) == shown


def test_every_plain_text_of_a_chat_is_free_of_control_sequences(ip: InteractiveShell) -> None:
    hostile = "\x1b]0;owned\x07\x1b[2J\x1b[31mred\x1b[0m\rover"
    view = ChatDisplay(live=True)
    with capture_output() as captured:
        view.on_text(f"The answer {hostile}")
        view(ToolStarted("c1", f"read{hostile}", json.dumps({"path": hostile})))
        view(ToolFinished("c1", f"read{hostile}", False, 40, 40, hostile))
        view.on_text(hostile)
        view.error(f"the server said {hostile}")
        view.finish(ChatResult(text=hostile, stop_message=f"stopped {hostile}"))
    plains = [str(o.data.get("text/plain", "")) for o in captured.outputs]
    assert plains and not any(re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", p) for p in plains)
    assert any("The answer ]0;" not in p and "The answer redover" in p for p in plains)


def test_a_short_text_is_not_cut() -> None:
    assert clean_cut("short", 10) == "short"
