"""The model's reply as inert HTML: its Markdown rendered by a CommonMark parser with raw
HTML off (markdown-it-py; GFM tables and strikethrough; `$…$`/`$$…$$` math left as text for
the page's typesetter), links only to http(s), mailto or relative addresses, the result
passed through an allowlist sanitizer (nh3), and only then our own copy buttons added.
Code blocks are coloured by `_highlight`.
Text the model wrote is content here, never markup that runs.
"""

from __future__ import annotations

import html
import re
import secrets
from collections.abc import Sequence
from functools import cache
from typing import Any

import nh3
from markdown_it import MarkdownIt
from markdown_it.token import Token
from mdit_py_plugins.dollarmath import dollarmath_plugin

from ._highlight import highlight

# What a rendered reply may hold once sanitized: the tags CommonMark and GFM tables produce,
# links, and the spans our math keeps. No image: a remote image would be fetched the moment
# the reply is drawn, so a prompt injection could leak what the model read through its URL.
TAGS = {
    "p", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "li", "blockquote", "hr", "br",
    "pre", "code", "em", "strong", "del", "s", "a", "table", "thead", "tbody", "tr", "th",
    "td", "span", "div",
}
ATTRIBUTES = {"a": {"href", "title"}, "ol": {"start"}, "th": {"style"}, "td": {"style"},
              "span": {"style"}}
# Styles that survive: a table column's alignment and our code colours. The model cannot
# write a style (raw HTML is off); this keeps ours and bounds what any could do.
STYLES = {"text-align", "color"}
SCHEMES = {"http", "https", "mailto"}
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*):")


def allowed_link(url: str) -> bool:
    """http(s), mailto or a relative address; nothing else (`javascript:`, `data:`,
    `vbscript:`, `file:` and unknown schemes). markdown-it has already decoded entities
    and percent-encoded controls and spaces, so a scheme cannot hide behind them."""
    scheme = _SCHEME.match(url.strip())
    if scheme is not None:
        return scheme.group(1).lower() in SCHEMES
    # A relative address: no colon may come before its path, query or fragment starts.
    head = re.split(r"[/?#]", url, maxsplit=1)[0]
    return ":" not in head


def _math(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    """Math kept as its TeX between dollars, escaped, for the page's typesetter (MathJax
    in JupyterLab reads `$…$` and `$$…$$` in rendered HTML); elsewhere it reads as TeX."""
    token = tokens[idx]
    tex = html.escape(token.content.strip())
    if token.type == "math_block":
        return f"<div>$${tex}$$</div>\n"
    fence = "$$" if token.type == "math_inline_double" else "$"
    return f"<span>{fence}{tex}{fence}</span>"


def _fence(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    """A fenced code block: escaped code, then a placeholder for its copy button that only
    this render can name (a per-render nonce), swapped for the button after sanitizing."""
    token = tokens[idx]
    code = token.content
    language = token.info.split(maxsplit=1)[0] if token.info.strip() else ""
    block = f"<pre><code>{highlight(code, language)}</code></pre>\n"
    if not _closed(token, env["lines"]):
        return block  # still streaming: its button comes when the fence closes
    env["codes"].append(code.removesuffix("\n"))
    return f"{block}<p>{env['nonce']}:{len(env['codes']) - 1}</p>\n"


def _closed(token: Token, lines: list[str]) -> bool:
    """Whether a fence has its closing line (a reply mid-stream often has not)."""
    if token.map is None or token.map[1] - token.map[0] < 2:
        return False
    last = lines[token.map[1] - 1].strip().lstrip(">").strip() if token.map[1] <= len(
        lines) else ""
    return bool(last) and set(last) == {token.markup[0]} and len(last) >= len(token.markup)


def _image(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    """An image becomes a link to it: shown only if the user follows it."""
    token = tokens[idx]
    alt = self.renderInlineAsText(token.children or [], options, env) or "image"
    src = str(token.attrGet("src") or "")
    return f'<a href="{html.escape(src)}">{html.escape(f"[image: {alt}]")}</a>'


@cache
def _parser() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.enable(["table", "strikethrough"])
    # Math as in Jupyter's Markdown: `$` may not touch a space inside, nor a digit outside
    # ("costs $5 and $10" stays text).
    dollarmath_plugin(md, allow_labels=False, allow_space=False, allow_digits=False,
                      double_inline=True)
    for kind in ("math_inline", "math_inline_double", "math_block"):
        md.add_render_rule(kind, _math)
    md.validateLink = allowed_link  # type: ignore[method-assign]
    md.add_render_rule("fence", _fence)
    md.add_render_rule("image", _image)
    return md


@cache
def _cleaner() -> nh3.Cleaner:
    return nh3.Cleaner(tags=TAGS, attributes=ATTRIBUTES, url_schemes=SCHEMES,
                       clean_content_tags={"script", "style"},
                       filter_style_properties=STYLES, link_rel="noopener noreferrer")


def clean_html(markup: str) -> str:
    """HTML from outside (what an agent run displays) through the replies' sanitizer: the
    same tags, attributes, link schemes and styles survive, nothing that runs."""
    return _cleaner().clean(markup)


def render_reply(markdown: str, button: Any = None) -> str:
    """The reply's Markdown as sanitized HTML; `button(code)` gives the markup of the copy
    button put under each complete fenced code block (our markup, added after sanitizing)."""
    env: dict[str, Any] = {"codes": [], "nonce": secrets.token_hex(12),
                           "lines": markdown.split("\n")}
    rendered = _parser().render(markdown, env)
    cleaned = _cleaner().clean(rendered)
    codes: list[str] = env["codes"]
    if not codes:
        return cleaned
    nonce = env["nonce"]

    def swap(match: re.Match[str]) -> str:
        return button(codes[int(match.group(1))]) if button is not None else ""

    return re.sub(rf"<p>{nonce}:(\d+)</p>", swap, cleaned)
