"""The small output bundles every notebook line is made of: text/plain beside text/html,
styled with JupyterLab's theme variables (with fallbacks), so a line reads the same in a
live notebook, a reloaded one, nbviewer and GitHub. Their text/plain is what a terminal
prints, so it never carries a control sequence (`terminal_text`).
"""

from __future__ import annotations

import html

from nbagent.text import terminal_text as terminal_text  # the lines below and their users

Bundle = dict[str, str]
CUT = "… [cut]"


def inert(bundle: Bundle) -> Bundle:
    """The bundle with its text/plain made safe for a terminal."""
    plain = bundle.get("text/plain")
    return bundle if not plain else {**bundle, "text/plain": terminal_text(plain)}


def clean_cut(text: str, limit: int | None = None) -> str:
    """`text` cut at `limit` (or as given) on a word boundary when one is near, with a
    visible marker that something follows."""
    if limit is not None and len(text) <= limit:
        return text
    head = text if limit is None else text[:limit]
    space = max(head.rfind(" "), head.rfind("\n"))
    if space >= len(head) - 30 and space > 0:
        head = head[:space]
    return head.rstrip() + CUT


def line(css_class: str, html_text: str, plain: str) -> Bundle:
    """One line of output: wraps between words (never mid-word), in the theme's colours."""
    return {
        "text/plain": terminal_text(plain),
        "text/html": f'<div class="{css_class}" style="color:var(--jp-content-font-color1,'
                     f'#1a1a1a);white-space:pre-wrap;overflow-wrap:normal;word-break:normal">'
                     f"{html_text}</div>",
    }


def plain_line(css_class: str, text: str) -> Bundle:
    return line(css_class, html.escape(text), text)


def status_bundle(text: str) -> Bundle:
    if not text:
        return {"text/plain": ""}
    return line("nbagent-status",
                f'<i style="color:var(--jp-content-font-color2,#555)">{html.escape(text)}</i>',
                text)


def inline_code(text: str) -> str:
    parts = html.escape(text).split("`")
    return "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts))


def error_bundle(message: str, detail: str = "") -> Bundle:
    """An error in one line; `detail` (e.g. a provider's raw text) only behind a disclosure."""
    more = (f"<details><summary>details</summary><pre>{html.escape(detail)}</pre></details>"
            if detail else "")
    return {
        "text/plain": terminal_text(f"nbagent: {message}"),
        "text/html": (
            '<div class="nbagent-error" style="border-left:4px solid '
            "var(--jp-error-color1,#d32f2f);padding:2px 8px;color:"
            'var(--jp-content-font-color1,#1a1a1a)"><b>nbagent:</b> '
            f"{html.escape(message, quote=False)}{more}</div>"
        ),
    }
