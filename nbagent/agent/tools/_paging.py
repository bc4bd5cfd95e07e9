"""The size of one page a paging tool returns (a `paging` row of `BUILTIN_TOOLS`):
bounded in characters, in UTF-8 bytes and in lines at once, so no page can be larger
than the model can keep in view, whatever the text is made of (one long line, wide
characters, many short lines).
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_PAGE_CHARS = 16_000  # the default arrival cap of other tools' results
MAX_PAGE_BYTES = 32_000  # wide characters (CJK, emoji) cost up to four bytes each
MAX_PAGE_LINES = 500


@dataclass(frozen=True)
class PageBounds:
    """How large one page may be."""

    chars: int = MAX_PAGE_CHARS
    bytes: int = MAX_PAGE_BYTES
    lines: int = MAX_PAGE_LINES

    def clamp_chars(self, limit: int) -> int:
        """A requested page length in characters, between 1 and the bound."""
        return max(1, min(limit, self.chars))


PAGE = PageBounds()


def fitting_prefix(text: str, bounds: PageBounds = PAGE) -> int:
    """How many characters from the start of `text` fit in one page: at most
    `bounds.chars` characters, `bounds.bytes` UTF-8 bytes and `bounds.lines` lines (a
    page ends after its last whole line's newline when the line bound is what stops it)."""
    end = min(len(text), bounds.chars)
    newlines = 0
    start = 0
    while newlines < bounds.lines:  # find the end of the last allowed line
        found = text.find("\n", start, end)
        if found < 0:
            break
        newlines += 1
        start = found + 1
    if newlines >= bounds.lines:
        end = start
    if len(text[:end].encode("utf-8", errors="surrogatepass")) > bounds.bytes:
        low, high = 0, end  # the longest prefix within the byte bound
        while low < high:
            middle = (low + high + 1) // 2
            if len(text[:middle].encode("utf-8", errors="surrogatepass")) <= bounds.bytes:
                low = middle
            else:
                high = middle - 1
        end = low
    return end


def bounded(text: str, bounds: PageBounds = PAGE, *, how_to_continue: str = "") -> str:
    """`text` when it fits one page, else its fitting prefix and a line saying how much
    was left out and how to read on."""
    end = fitting_prefix(text, bounds)
    if end >= len(text):
        return text
    rest = f" {how_to_continue}" if how_to_continue else ""
    return (f"{text[:end]}\n[page cut at {end:,} of {len(text):,} characters (at most "
            f"{bounds.chars:,} characters, {bounds.bytes:,} bytes, {bounds.lines:,} lines a "
            f"page).{rest}]")
