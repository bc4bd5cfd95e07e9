"""The results an assistant reported: sentences that state a number, a percentage, a
count or a date about a named subject ("revenue_usd in EMEA-North fell 18.4% from October
to December"). The floor keeps them as it keeps names: they are the user's findings.
"""

from __future__ import annotations

import re

MAX_RESULT_CHARS = 240  # a longer sentence is cut here (recall returns it whole)
MIN_WORDS = 3  # words of letters around the number: the subject and what it did
MAX_RESULTS = 60  # the latest per text, before the budget

# a sentence ends at . ! ? or a line break, not at ";": "spend is skewed; the top value
# covers 28% of rows" cut there keeps a figure without its subject
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+")
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_FIGURE = re.compile(
    r"(?<![\w.])(?:[-+−]?\$?\d{1,3}(?:,\d{3})+(?:\.\d+)?|[-+−]?\$?\d+\.\d+|\d+(?:\.\d+)?\s?%"
    r"|\d{4}-\d{2}(?:-\d{2})?|[-+−]?\$?\d{2,})(?![\w])"
    r"|(?<![\w.])\d(?:\s+(?:rows?|columns?|records?|customers?|files?|outliers?|errors?|"
    r"missing|duplicates?|nulls?|users?|items?|orders?|times?))\b",
    re.IGNORECASE,
)
_WORD = re.compile(r"[A-Za-z][A-Za-z_\-']+")
FINDING = re.compile(  # a change or a comparison: what an analysis concludes
    r"\b(?:fell|falls?|rose|rises?|grew|grows?|drop(?:ped|s)?|increas\w*|decreas\w*|declin\w*|"
    r"doubl\w*|halv\w*|peak\w*|lowest|highest|largest|smallest|than|versus|vs\.?|up from|"
    r"down from|correlat\w*|significan\w*|accuracy|auc|rmse|r2|p-value)\b",
    re.IGNORECASE)
_FENCE = re.compile(r"^\s*```")


def _month_year(sentence: str) -> bool:
    lowered = sentence.lower()
    return any(m in lowered for m in _MONTHS) and re.search(r"\b(?:19|20)\d{2}\b", sentence) \
        is not None


def states_result(sentence: str) -> bool:
    """Whether `sentence` states a figure (or a dated fact) about a named subject."""
    if not (_FIGURE.search(sentence) or _month_year(sentence)):
        return False
    words = [w for w in _WORD.findall(sentence) if len(w) > 1]
    return len(words) >= MIN_WORDS


def results_in(text: str) -> list[str]:
    """The sentences of an assistant's reply that report results, in order (code blocks
    and table rows left out; bullets and emphasis marks stripped; long ones cut)."""
    found: list[str] = []
    fenced = False
    prose: list[str] = []
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced and not line.lstrip().startswith("|"):
            prose.append(line)
    for part in _SENTENCE.split("\n".join(prose)):
        sentence = " ".join(_BULLET.sub("", part).replace("**", "").split())
        if len(sentence) < 12 or not states_result(sentence):
            continue
        if len(sentence) > MAX_RESULT_CHARS:
            sentence = sentence[: MAX_RESULT_CHARS - 1].rstrip() + "…"
        found.append(sentence)
    return found[-MAX_RESULTS:]
