"""Code blocks of a reply coloured as JupyterLab colours code (`widgets/_highlight.py`), read
from what the chat display shows: each coloured token a span with the theme's CodeMirror
variable and a fallback, the code itself escaped text, and an unknown language only
escaped."""

from __future__ import annotations

import html
import re

import pytest
from IPython.utils.capture import capture_output
from nbagent.widgets import ChatDisplay

from nbagent import ChatResult
from tests.notebook.helpers import shown

pytestmark = pytest.mark.usefixtures("shell")  # display() publishes through a shell


def reply_html(text: str) -> str:
    with capture_output() as captured:
        ChatDisplay().finish(ChatResult(text=text))
    (reply,) = [d["text/html"] for d in shown(captured) if "nbagent-reply" in d["text/html"]]
    return str(reply)


def code_of(reply: str) -> str:
    """The text inside the reply's <code> element, as the reader sees it."""
    inner = re.search(r"<pre><code[^>]*>(.*?)</code></pre>", reply, re.DOTALL)
    assert inner is not None, reply
    return inner.group(1)


def test_python_is_coloured_with_the_themes_variables() -> None:
    code = 'print(frame.columns)  # the "<b>" stays text'
    inner = code_of(reply_html(f"```python\n{code}\n```"))
    assert '<span style="color:var(--jp-mirror-editor-builtin-color, green)">print</span>' in inner
    assert ('<span style="color:var(--jp-mirror-editor-property-color, #05a)">columns</span>'
            in inner)  # a name after a dot, its dot left plain
    assert "frame.<span" in inner
    assert "--jp-mirror-editor-comment-color" in inner and "&lt;b&gt;" in inner
    assert set(re.findall(r"<(\w+)", inner)) == {"span"}  # only our markup is markup
    assert html.unescape(re.sub(r"<[^>]+>", "", inner)) == code + "\n"  # nothing lost


def test_an_unknown_language_is_only_escaped() -> None:
    inner = code_of(reply_html("```nosuchlanguage\nx = <b>1</b>\n```"))
    assert inner == "x = &lt;b&gt;1&lt;/b&gt;\n"  # no span: escaped text alone
