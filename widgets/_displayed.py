"""What an agent run displays, made inert before it reaches the page, whichever object
produced it (a DataFrame, a pandas Styler, `IPython.display.HTML`, `Markdown`, `SVG`,
`Javascript`, any `_repr_html_` or `_repr_markdown_`): HTML goes through the replies'
sanitizer (`_render.clean_html`), Markdown and LaTeX are rendered as a reply is, raster
images pass (the page draws them as `<img>`, which runs nothing), an SVG becomes such an
image, and every other kind (JavaScript, widgets, JSON, PDF, a renderer's own data) is
dropped for the output's text. JupyterLab trusts the outputs of a cell run in the live
session — their HTML is inserted as it is and handlers run — so this is the only gate.
"""

from __future__ import annotations

import base64
import html
import re
from typing import Any

import nh3

from ._bundles import terminal_text
from ._render import clean_html, render_reply

# Kinds the page shows as an <img> of the data itself: inert, kept as they are.
RASTER = ("image/png", "image/jpeg", "image/gif", "image/webp", "image/bmp")
# Kinds shown as HTML once made inert, in the order a front end prefers them.
AS_HTML = ("text/html", "text/markdown", "text/latex", "image/svg+xml")


def _html_of(mime: str, source: str) -> str:
    if mime == "text/html":
        return clean_html(source)
    if mime == "image/svg+xml":  # drawn as an image: an SVG in an <img> runs no script
        data = base64.b64encode(source.encode("utf-8", "replace")).decode("ascii")
        return f'<img src="data:image/svg+xml;base64,{data}" alt="an SVG image">'
    return render_reply(source)  # Markdown, and LaTeX as a reply's math


def _text(value: Any) -> str:
    if isinstance(value, list):  # nbformat's multi-line form
        return "".join(str(part) for part in value)
    return str(value)


def inert_output(data: dict[str, Any], metadata: dict[str, Any] | None = None
                 ) -> tuple[dict[str, Any], dict[str, Any]]:
    """`data` (a mime bundle) and its `metadata` as they may be shown: the first kind of
    `AS_HTML` it holds as sanitized HTML, its raster images, its text/plain control-free;
    everything else dropped (said in the text when nothing else is left)."""
    shown: dict[str, Any] = {}
    for mime in AS_HTML:
        if mime in data:
            shown["text/html"] = _html_of(mime, _text(data[mime]))
            break
    for mime in RASTER:
        if isinstance(data.get(mime), str):
            shown[mime] = data[mime]
    plain = data.get("text/plain")
    if plain is not None:
        shown["text/plain"] = terminal_text(_text(plain))
    elif not shown:
        kinds = ", ".join(sorted(map(str, data))) or "empty"
        shown["text/plain"] = f"(an output of kind {kinds}: not shown, it could run code)"
    kept = {mime: value for mime, value in (metadata or {}).items() if mime in RASTER
            and mime in shown and isinstance(value, dict)}
    return shown, kept


def html_text(markup: str) -> str:
    """The text of sanitized HTML (what a reader of the page sees, roughly): each table row
    on a line of its own, its cells apart, no tags."""
    markup = re.sub(r"</(?:tr|p|div|li|h\d)>|<br\s*/?>", "\n", markup)
    markup = re.sub(r"</t[dh]>", "  ", markup)
    text = html.unescape(nh3.clean(markup, tags=set()))
    return "\n".join(line.rstrip() for line in text.splitlines() if line.strip())
