"""The user's messages in a floor: fitted into a token budget without dropping one
silently — the oldest middle ones shortened to their leading and directive sentences
(where a decision usually sits), then cut, then left out with one line saying how many.
"""

from __future__ import annotations

import re

from .._markers import SHORTENED
from .._tokens import estimate_tokens

SHORT_CHARS = 60  # a shortened user message keeps its leading sentences up to this...
SHORT_MAX_CHARS = 200  # ... and any later directive sentence, up to this
TINY_CHARS = 32  # the shortest form of a user message that decides nothing

_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_DIRECTIVE = re.compile(  # a sentence that decides something for the rest of the session
    r"^(?:(?:ok|okay|good|great|thanks|yes|no)[,.!]?\s+)?(?:let'?s|let us|please|don'?t|do not|"
    r"never|always|use|drop|exclude|include|keep|remove|only|switch|change|make sure|from now on|"
    r"instead|stop|rename|filter|replace|treat|report|cap|clip|fill|impute|ignore|skip|avoid|"
    r"limit|restrict|prefer|go with|we(?:'ll| will| should| must)|i want|i'd like)\b"
    r"|\b(?:instead|from now on|must|should|don'?t|never|always|decided?)\b",
    re.IGNORECASE,
)
_OMITTED = "[{count} user messages left out here for space; recall(query=...) finds them]"
_OMITTED_COUNT = re.compile(r"^\[(\d+) user messages left out here")


def decides(text: str) -> bool:
    """Whether a user message holds a decision (a directive sentence)."""
    return any(_DIRECTIVE.search(s.strip()) for s in _SENTENCE.split(text) if s)


def shorten_user_message(text: str) -> str:
    """The leading sentences (and later directive ones, where a decision usually sits),
    marked as shortened; recall returns the whole message."""
    if text.endswith(SHORTENED) or len(text) <= SHORT_CHARS + len(SHORTENED):
        return text
    sentences = [s for s in _SENTENCE.split(text.strip()) if s]
    kept: list[str] = []
    size = 0
    for sentence in sentences:
        if size < SHORT_CHARS or _DIRECTIVE.search(sentence.strip()):
            sentence = sentence[: max(0, SHORT_MAX_CHARS - size)]
            if not sentence:
                break
            kept.append(sentence)
            size += len(sentence) + 1
    short = f"{' '.join(kept)} {SHORTENED}"
    return short if len(short) < len(text) else text


def _cut(text: str, tokens: int) -> str:
    """Head and tail of an over-long message that must stay (the first request)."""
    chars = max(200, tokens * 3)
    if len(text) <= chars:
        return text
    half = chars // 2
    return f"{text[:half]} {SHORTENED} {text[-half:]}"


def _tiny(text: str) -> str:
    short = f"{text[:TINY_CHARS].rstrip()} {SHORTENED}"
    return short if len(short) < len(text) else text


def fit_users(texts: list[str], budget: int, keep_first: bool, keep_last: bool,
              whole_first: bool = False) -> list[str]:
    """Fit the user messages into `budget`, never dropping one silently. In turn, until
    it fits: shorten the oldest middle ones (leading and directive sentences); cut the
    oldest ones that decide nothing to their first words; then leave the oldest out, those
    that decide nothing first, with one line saying how many and how to find them. The
    first (the request) and the last (the latest ask) stay whole when asked, unless one
    alone is longer than half the budget (then its head and tail stay); `whole_first`
    keeps the first whole at any length (L4 moves it out of the history into its block)."""
    if not texts:
        return []
    protected = {0} if keep_first or whole_first else set()
    if keep_last:
        protected.add(len(texts) - 1)
    items = [t if i == 0 and whole_first else _cut(t, budget // 2) if i in protected else t
             for i, t in enumerate(texts)]
    costs = [estimate_tokens(t) + 2 for t in items]
    total = sum(costs)
    order = [i for i in range(len(items)) if i not in protected]  # the oldest first
    plain = [i for i in order if not decides(items[i])]
    for shorten, indexes in ((shorten_user_message, order), (_tiny, plain)):
        for index in indexes:
            if total <= budget:
                return items
            short = shorten(items[index])
            cost = estimate_tokens(short) + 2
            total += cost - costs[index]
            items[index], costs[index] = short, cost
    if total <= budget:
        return items
    gone: set[int] = set()
    left_out = 0
    for index in [*plain, *(i for i in order if i not in plain)]:
        if total <= budget - 20:  # room for the line that says so
            break
        total -= costs[index]
        gone.add(index)
        counted = _OMITTED_COUNT.match(items[index])
        left_out += int(counted.group(1)) if counted else 1
    if not gone:  # nothing here may be left out: over the budget as it is
        return items
    note = _OMITTED.format(count=left_out)
    kept: list[str] = []
    for index, text in enumerate(items):
        if index == min(gone):
            kept.append(note)
        if index not in gone:
            kept.append(text)
    return kept
