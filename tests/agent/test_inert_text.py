"""Text from outside made inert: one answer (nbagent.text) for the MCP definitions, the
approval question and the notebook's text/plain."""

from __future__ import annotations

import pytest

from nbagent.approval import ApprovalRequest
from nbagent.text import hidden_in, strip_hidden, terminal_text, visible

CONTROLLED = [
    ("\x1b[31mred\x1b[0m", "red"),
    ("a\x1b[2Jb", "ab"),  # erase screen: the whole sequence, not only its ESC
    ("\x9b2Jx", "x"),  # the 8-bit CSI
    ("\x1b]0;title\x07tail", "tail"),  # OSC retitling the window
    ("\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\", "link"),  # OSC 8 hyperlink
    ("\x9d0;title\x9cz", "z"),  # 8-bit OSC with its 8-bit terminator
    ("\x1bPq#0;2;0;0;0\x1b\\after", "after"),  # DCS (sixel)
    ("\x1b(0lqk", "lqk"),  # charset switch
    ("bell\x07 back\x08space", "bell backspace"),
    ("over\rwrite", "overwrite"),  # a lone carriage return cannot overwrite a line
    ("line\r\nnext\ttab", "line\nnext\ttab"),
]


@pytest.mark.parametrize(("raw", "shown"), CONTROLLED, ids=[repr(r)[:24] for r, _ in CONTROLLED])
def test_terminal_text_leaves_no_control_sequence(raw: str, shown: str) -> None:
    assert terminal_text(raw) == shown


def test_ordinary_text_is_kept_exactly() -> None:
    text = "Größe ≤ 3 · 価格 — naïve café 🙂\n\tdf['a'] < 5 & x"
    assert terminal_text(text) == text and strip_hidden(text) == text


@pytest.mark.parametrize("hidden", ["\u200b", "\u200e", "\u202e", "\u2066", "\ufeff",
                                    "\U000e0041", "\ufe0f", "\ue000"],
                         ids=["zwsp", "lrm", "rlo", "lri", "bom", "tag", "vs16", "private"])
def test_strip_hidden_takes_out_what_a_reader_cannot_see(hidden: str) -> None:
    assert strip_hidden(f"send{hidden} the{hidden}{hidden} file") == "send the file"
    assert terminal_text(f"a{hidden}b") == f"a{hidden}b"  # a terminal shows it harmlessly


def test_the_approval_question_carries_no_control_sequence() -> None:
    request = ApprovalRequest(action="call", subject="tool \x1b]0;pwned\x07x\u200e",
                              source="server\x1b[2J", details={"to": "a\x9b2Jb\x85"}, scopes=())
    question = request.question()
    assert not any(ord(ch) < 32 and ch not in "\n\t" or 0x7f <= ord(ch) <= 0x9f
                   for ch in question)
    assert "\u200e" not in question  # nothing drawn, and nothing dropped: written out
    assert "tool ⟨U+001B⟩]0;pwned⟨U+0007⟩x⟨U+200E⟩" in question
    assert "server⟨U+001B⟩[2J" in question and '"a⟨U+009B⟩2Jb⟨U+0085⟩"' in question


SHOWN = [
    # Trojan Source (CVE-2021-42574): a bidi isolate drawn live hides a call in a string
    ("s = '\u2067' ;os.remove(p)\u2069", "s = '⟨U+2067⟩' ;os.remove(p)⟨U+2069⟩"),
    ("a\u202eb", "a⟨U+202E⟩b"),
    ("x\u200by", "x⟨U+200B⟩y"),
    ("tag\U000e0041", "tag⟨U+E0041⟩"),
    ("\x1b[2Jcleared", "⟨U+001B⟩[2Jcleared"),  # an escape is shown, never acted on
    ("b\x08ack", "b⟨U+0008⟩ack"),
    # Python reads a lone CR as a line break: shown as one, and marked
    ("x = 1\r# y\ros.remove(p)", "x = 1⟨U+000D⟩\n# y⟨U+000D⟩\nos.remove(p)"),
    ("one\u2028two", "one⟨U+2028⟩two"),  # drawn as a break by some readers, not by Python
]


@pytest.mark.parametrize(("raw", "shown"), SHOWN, ids=[repr(r)[:24] for r, _ in SHOWN])
def test_visible_writes_every_hidden_character_where_it_stands(raw: str, shown: str) -> None:
    assert visible(raw) == shown
    assert hidden_in(raw), "each one is named for the question's warning"


def test_visible_reads_cr_lf_as_the_newline_it_is() -> None:
    assert visible("a\r\nb\r\n") == "a\nb\n" and hidden_in("a\r\nb") == []


def test_visible_keeps_ordinary_code_exactly() -> None:
    code = "df = pd.read_csv('größe.csv')\n\tprint(df['価格'].sum())  # naïve 🙂\n"
    assert visible(code) == code and hidden_in(code) == []


def test_hidden_in_names_each_character_once_in_order() -> None:
    assert hidden_in("\u2067a\u2067\rb\u200b") == [
        "U+2067 RIGHT-TO-LEFT ISOLATE", "U+000D CARRIAGE RETURN", "U+200B ZERO WIDTH SPACE"]
