"""Which reported results the floor keeps: a result whose figure a tool's output (a run of
code, a query) printed just before the assistant reported it is marked as computed and
ranked with the findings; the same subject reported again with the same figures is kept
once; under a bound, findings and computed results go first, then the latest others.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal, InvalidOperation

from ._results import FINDING

# The mark a computed result carries in the floor's text, so the rank survives a render
# and a read back (a memory block, a summary): the tool output that proved it is gone by
# the next compaction. The model reads it too: that figure came from an output.
COMPUTED = "(computed) "
MAX_DECIMALS = 8  # an output's decimals looked at when a reply rounds its figure
MAX_COMPARED = 240  # results compared for near-duplicates (bounds the pairwise work)

_NUMBER = re.compile(r"(?<![\w.])[-+−]?\d[\d,]*(?:\.\d+)?(?![\w])")
_WORD = re.compile(r"[A-Za-z][\w\-']*")  # a name's digits are part of it: col_1 is not col_2


def _plain(figure: str) -> str:
    return figure.lstrip("-+−").rstrip(".,").replace(",", "")


def _telling(figure: str) -> bool:
    """A figure that says where it came from: one with decimals or at least three digits.
    Small whole numbers (7, 28%) occur in any table by chance, so they prove nothing."""
    return "." in figure or len(figure) >= 3


class Outputs:
    """The numbers tool outputs printed since the assistant last spoke, read lazily (most
    replies report nothing, so most outputs are never scanned)."""

    def __init__(self) -> None:
        self._texts: list[str] = []
        self._whole: set[str] = set()
        self._rounded: set[tuple[int, Decimal]] = set()  # (decimals, value rounded to them)

    def add(self, text: str) -> None:
        self._texts.append(text)

    def clear(self) -> None:
        self._texts.clear()
        self._whole.clear()
        self._rounded.clear()

    def _read(self) -> None:
        for text in self._texts:
            for token in _NUMBER.findall(text):
                number = _plain(token)
                if "." not in number:
                    self._whole.add(number.lstrip("0") or "0")
                    continue
                try:
                    value = Decimal(number)
                except InvalidOperation:
                    continue
                places = min(len(number.partition(".")[2]), MAX_DECIMALS)
                for kept in range(1, places + 1):  # every rounding a reply might show
                    step = Decimal(1).scaleb(-kept)
                    for mode in (ROUND_HALF_UP, ROUND_HALF_EVEN):
                        self._rounded.add((kept, value.quantize(step, rounding=mode)))
        self._texts.clear()

    def printed(self, figure: str) -> bool:
        """Whether an output printed `figure` (as it is, or to more decimals that round to
        it; a percentage also as its fraction: 28.4% from 0.2843)."""
        self._read()
        number = _plain(figure.rstrip("%").strip())
        if not number or not _telling(number):
            return False
        places = len(number.partition(".")[2])
        try:
            value = Decimal(number)
        except InvalidOperation:
            return False
        if places == 0 and (number.lstrip("0") or "0") in self._whole:
            return True
        if places and (places, value) in self._rounded:
            return True
        return figure.endswith("%") and (places + 2, value.scaleb(-2)) in self._rounded


def figures(sentence: str) -> list[str]:
    """The figures of a result, as written (a percent sign kept)."""
    return [m.group(0) + ("%" if sentence[m.end():m.end() + 1] == "%" else "")
            for m in _NUMBER.finditer(sentence)]


def marked(results: Iterable[str], outputs: Outputs) -> list[str]:
    """`results` of one reply, the computed ones marked: a telling figure of theirs was
    printed by a tool output the reply followed."""
    return [COMPUTED + r if any(outputs.printed(f) for f in figures(r)) else r for r in results]


def rank(result: str) -> int:
    """0 for a finding (a change, a comparison, a model's score) or a computed result, 1
    for another figure: under a bound the floor keeps rank 0 first, the latest first in
    each rank."""
    return 0 if result.startswith(COMPUTED) or FINDING.search(result) else 1


def _key(result: str) -> tuple[str, ...]:
    return tuple(sorted(_plain(f.rstrip("%")) for f in figures(result)))


def _words(result: str) -> frozenset[str]:
    return frozenset(w.lower() for w in _WORD.findall(result.removeprefix(COMPUTED))
                     if len(w) > 1)


def collapse(results: Sequence[str]) -> list[str]:
    """`results` with near-duplicates kept once: a result is dropped when another states
    the same figures and every word of it (the same subject said again, or said with more
    detail); the fuller one stays (of equal ones, the latest), computed if either was."""
    groups: dict[tuple[str, ...], list[int]] = {}
    for index, result in enumerate(results):
        groups.setdefault(_key(result), []).append(index)
    out: dict[int, str] = {}
    for indexes in groups.values():
        words = {i: _words(results[i]) for i in indexes}
        for i in indexes:
            covers = [j for j in indexes if j != i and words[i] <= words[j]
                      and (words[i] < words[j] or j > i)]
            if not covers:
                out[i] = results[i]
        for i in indexes:  # a dropped one's mark passes to the one that covers it
            if i in out or not results[i].startswith(COMPUTED):
                continue
            for j in sorted(out):
                if j in indexes and words[i] <= words[j] and not out[j].startswith(COMPUTED):
                    out[j] = COMPUTED + out[j]
    return [out[i] for i in sorted(out)]


def choose(results: Sequence[str], limit: float, cost: Callable[[str], float] = lambda _: 1
           ) -> list[str]:
    """The results that fit `limit` (summed `cost`), rank 0 first, the latest first in each
    rank; in their order."""
    order = sorted(range(len(results)), key=lambda i: (rank(results[i]), -i))
    chosen: set[int] = set()
    used = 0.0
    for index in order:
        spent = cost(results[index])
        if used + spent > limit:
            break
        chosen.add(index)
        used += spent
    return [r for i, r in enumerate(results) if i in chosen]


def kept(results: Sequence[str], limit: float, cost: Callable[[str], float] = lambda _: 1
         ) -> list[str]:
    """`choose` among `results` once near-duplicates are collapsed. Only the first
    `MAX_COMPARED` by rank are compared (the pairs grow as the square): a long session's
    other results past those would not be chosen anyway."""
    pool = choose(results, MAX_COMPARED) if len(results) > MAX_COMPARED else results
    return choose(collapse(pool), limit, cost)
