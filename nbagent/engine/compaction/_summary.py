"""L3: fold the whole conversation into one summary, a section per `SECTIONS` title.

`SECTIONS` is the one table of the sections: the prompt lists them (and counts them,
`sections_in_words`), `parse_sections` and `validate_summary` read them, and
`is_summary_request` tells a fake summarizer this prompt from the session memory's.

The summarizer's reply is validated (every section present and non-empty, not
an error message) and retried once; the deterministic floor (bounded) is merged
in so the user's words and the identifiers seen survive a weak summarizer.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .._exceptions import CompactionFailed
from .._markers import (
    SUMMARY_HEADER,
    is_memory,
    is_note,
    is_notebook_state,
    is_plain_user,
    is_summary,
)
from .._tokens import estimate_message_tokens, estimate_tokens
from ._common import (
    Layout,
    LevelResult,
    Message,
    Summarizer,
    ask_within,
    counts_for,
    looks_like_error,
    pending_start,
    prefix_sums,
)
from ._floor import (
    default_budget,
    extract_floor,
    floor_tokens,
    kept_tokens,
    shorten_user_message,
)
from ._floor_render import render_floor_parts
from ._render import RESULT_CHARS, render_message

SECTIONS = (  # in the order asked; a new one goes at the end (see docs/architecture.md)
    "Primary Request and Intent",
    "Key Technical Concepts",
    "Files and Code Sections",
    "Errors and fixes",
    "Problem Solving",
    "All user messages",
    "Pending Tasks",
    "Current Work",
    "Optional Next Step",
)

SUMMARY_SYSTEM = (
    "You write the working summary of a conversation between a data scientist and an AI "
    "assistant working in a Jupyter notebook. The assistant will continue from your summary "
    "alone, so keep every detail it needs: exact names, numbers, paths and decisions."
)

_LEAD = "Summarize the conversation below."  # how the full summary's prompt begins

_INSTRUCTIONS = _LEAD + """ Reply with exactly these {count} sections, \
each under a markdown heading with its number and title, in this order:

{headings}

Each section must have content (write "None." when there is nothing to say). Quote file \
paths, variable and column names exactly. "All user messages" lists every user message."""

_HEADING = re.compile(
    r"^\s*(?:#{1,6}\s*|\*\*)?\s*(?:\d+[.)]\s*)?(?P<title>[A-Za-z ]+?)\s*:?\s*(?:\*\*)?\s*:?\s*$",
    re.MULTILINE,
)
_OMITTED = "[... {count:,} earlier messages omitted to fit the summarizer's window ...]"


_RETRY = ("That reply is not usable: {problems}. Write it again with all {count} sections, "
          "each under its own heading.")
_WORDS = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
          "eleven", "twelve")

# the floor's part (a `render_floor_parts` key) each section gets under the model's words
_FLOOR_PARTS = {
    "Primary Request and Intent": "focus",
    "All user messages": "users",
    "Files and Code Sections": "names",
    "Errors and fixes": "errors",
    "Problem Solving": "results",
}
# the sections where the first and the latest user request stand in for a "None."
_FIRST_REQUEST, _LATEST_REQUEST = "Primary Request and Intent", "Current Work"


def sections_in_words() -> str:
    """How many `SECTIONS` there are, as the prompt says it ("nine"; digits past twelve)."""
    count = len(SECTIONS)
    return _WORDS[count] if count < len(_WORDS) else str(count)


def is_summary_request(request: str | Sequence[Message]) -> bool:
    """Whether `request` asks for the full summary in `SECTIONS` (`full_compact`'s prompt)
    rather than the session memory's notes: the prompt's text, or a summarizer's request
    (its first user message is the prompt, also when the request is the retry). For a fake
    summarizer that answers both (the offline analyst, the benches), so it follows the
    prompt's wording instead of quoting it."""
    if not isinstance(request, str):
        request = next((str(m.get("content") or "") for m in request if m["role"] == "user"), "")
    return request.startswith(_LEAD)


def summary_prompt(transcript: str, focus: str | None) -> list[Message]:
    headings = "\n".join(f"## {n}. {title}" for n, title in enumerate(SECTIONS, 1))
    text = _INSTRUCTIONS.format(count=sections_in_words(), headings=headings)
    if focus:
        text += f"\n\nThe user asked this summary to focus on: {focus}"
    text += f"\n\n<conversation>\n{transcript}\n</conversation>"
    return [{"role": "system", "content": SUMMARY_SYSTEM}, {"role": "user", "content": text}]


def parse_sections(text: str) -> dict[str, str]:
    """Split a reply into its known sections (title → body); unknown headings are body text."""
    wanted = {title.lower(): title for title in SECTIONS}
    found: dict[str, str] = {}
    current: str | None = None
    lines: list[str] = []
    for line in text.splitlines():
        match = _HEADING.match(line)
        title = wanted.get(match.group("title").strip().lower()) if match else None
        if title is not None:
            if current is not None:
                found[current] = "\n".join(lines).strip()
            current, lines = title, []
        elif current is not None:
            lines.append(line)
    if current is not None:
        found[current] = "\n".join(lines).strip()
    return found


def validate_summary(text: str) -> list[str]:
    """Problems with a summarizer's reply; an empty list means it is valid."""
    if not text.strip():
        return ["the reply is empty"]
    if looks_like_error(text):
        return ["the reply is an error message, not a summary"]
    sections = parse_sections(text)
    missing = [title for title in SECTIONS if title not in sections]
    empty = [title for title in SECTIONS if title in sections and not sections[title]]
    problems = []
    if missing:
        problems.append(f"missing sections: {', '.join(missing)}")
    if empty:
        problems.append(f"empty sections: {', '.join(empty)}")
    return problems


_NONE = re.compile(
    r"^\W*(?:none|n/?a|nothing|not applicable|-+|no (?:errors?|issues?|files?|tasks?|"
    r"pending tasks?|next steps?|messages?))(?: yet| so far)?\W*$", re.IGNORECASE)


def says_nothing(body: str) -> bool:
    """Whether a section's body is empty or only says there is nothing ("None.", "N/A")."""
    return not body.strip() or _NONE.match(body.strip()) is not None


def _with_floor(sections: dict[str, str], floor: dict[str, str], first: str | None,
                latest: str | None) -> str:
    """Every section with the floor merged in: the parts the floor has for a section
    (`_FLOOR_PARTS`) are added to it, and a section that says nothing while the floor has
    content for it is filled from the floor instead (a weak summarizer's "None." never
    hides them)."""
    additions = {title: floor.get(part) for title, part in _FLOOR_PARTS.items()}
    stand_ins = {
        _FIRST_REQUEST: f"The first request: {shorten_user_message(first)}" if first else None,
        _LATEST_REQUEST: f"The latest request: {shorten_user_message(latest)}"
        if latest else None,
    }
    parts = [SUMMARY_HEADER]
    for number, title in enumerate(SECTIONS, 1):
        body = sections.get(title, "").strip()
        extra = additions.get(title)
        if says_nothing(body):
            filled = [text for text in (stand_ins.get(title), extra) if text]
            body = "\n\n".join(filled) if filled else "None."
        elif extra:
            body = f"{body}\n\n{extra}"
        parts.append(f"## {number}. {title}\n{body}")
    return "\n\n".join(parts)


def _fit_transcript(span: Sequence[Message], counts: Sequence[int], budget: int | None) -> str:
    """Render `span` but its notebook notes (the kernel's state then; the live one comes
    with the next request); over budget, keep the first user request and the most recent
    part."""
    kept = [(m, count) for m, count in zip(span, counts, strict=True) if not is_note(m)]
    span, counts = [m for m, _ in kept], [count for _, count in kept]
    rendered = [render_message(m) for m in span]
    if budget is None:
        return "\n\n".join(rendered)
    sizes = [  # a message's own count, unless rendering cut it (a long tool result)
        estimate_tokens(text) if m["role"] == "tool" and len(str(m.get("content") or ""))
        > RESULT_CHARS else count for m, text, count in zip(span, rendered, counts, strict=True)
    ]
    if sum(sizes) <= budget:
        return "\n\n".join(rendered)
    first = next((i for i, m in enumerate(span) if is_plain_user(m)), None)
    head = [rendered[first]] if first is not None else []
    spent = (sizes[first] if first is not None else 0) + 20
    start = len(rendered)
    while start > 0 and start - 1 != first:
        cost = sizes[start - 1]
        if spent + cost > budget:
            break
        spent += cost
        start -= 1
    omitted = start - (first + 1 if first is not None else 0)
    middle = [_OMITTED.format(count=omitted)] if omitted > 0 else []
    return "\n\n".join([*head, *middle, *rendered[start:]])


def full_compact(
    messages: Sequence[Message],
    summarize: Summarizer,
    focus: str | None = None,
    *,
    max_input_tokens: int | None = None,
    keep_latest_user: bool = True,
    floor_fallback: bool = True,
    floor_tokens_budget: int | None = None,
    counts: Sequence[int] | None = None,
    max_calls: int | None = None,
) -> LevelResult:
    """Replace everything after the system prompt with one summary in `SECTIONS`.

    Args:
        summarize: the model seam; called once, and once more if the reply is invalid
            (unless `max_calls` is 1: then once).
        focus: the user's instructions for the summary (e.g. "keep the column names").
        max_input_tokens: the summarizing model's window; a longer transcript keeps
            the first user request and the most recent part, cutting the middle.
        keep_latest_user: keep the latest user message verbatim after the summary.
            A trailing turn whose tool calls await results is always kept verbatim.
        floor_tokens_budget: the most the floor may take (see `floor_budget`); by
            default a share of the input's size.
        counts: one token count per message (e.g. `History`'s); computed once if None.

    The preamble (system prompt, pins) and the notebook-state block stay as they are.

    When both replies are invalid, the summary is built from what the model did
    write plus the deterministic floor, and the result is marked `degraded` (the
    controller counts it as a failure); with `floor_fallback=False` it raises
    `CompactionFailed` instead. A summarizer that raises always raises.
    """
    counts = counts_for(messages, counts)
    sums = prefix_sums(counts)
    layout = Layout.of(messages)
    pending = pending_start(messages)  # a turn awaiting tool results is kept verbatim
    indexes = [i for i in range(layout.body, pending) if not is_notebook_state(messages[i])]
    states = [i for i in range(layout.body, pending) if is_notebook_state(messages[i])]
    span = [messages[i] for i in indexes]
    if not any(is_plain_user(m) for m in span) and layout.blocks_end == layout.body:
        return LevelResult.unchanged(messages, "no conversation to summarize yet")
    budget = None
    if max_input_tokens is not None:
        overhead = sum(estimate_tokens(m["content"]) for m in summary_prompt("", focus))
        budget = max(256, int(max_input_tokens * 0.75) - overhead)
    transcript = _fit_transcript(span, [counts[i] for i in indexes], budget)
    request = summary_prompt(transcript, focus)
    retry = _RETRY.format(count=sections_in_words(), problems="{problems}")  # `ask` fills it
    reply, calls, cost, problems = ask_within(summarize, request, validate_summary, retry,
                                              max_calls)
    times = "twice" if calls > 1 else "(asked once)"
    if problems and not floor_fallback:
        raise CompactionFailed(f"invalid summary {times}: {'; '.join(problems)}",
                               summary_calls=calls, cost=cost)
    degraded = bool(problems)  # invalid twice: keep what it wrote, the floor fills the rest
    sections = {} if looks_like_error(reply.text) else parse_sections(reply.text)
    latest = next((i for i in reversed(indexes) if is_plain_user(messages[i])), None)
    keep_latest = keep_latest_user and latest is not None
    carried = sum((kept_tokens if is_memory(messages[i]) else floor_tokens)(
        str(messages[i]["content"])) for i in indexes
        if is_memory(messages[i]) or is_summary(messages[i]))
    floor_budget = (floor_tokens_budget if floor_tokens_budget is not None
                    else default_budget(sums[-1], carried))
    seen = extract_floor(span, focus)
    floor = render_floor_parts(seen, floor_budget, keep_first=True,
                               keep_last=not keep_latest, focus=focus)
    first = seen.user_messages[0] if seen.user_messages else None
    latest_text = str(messages[latest]["content"]) if latest is not None else None
    summary = _with_floor(sections, floor, first, latest_text)
    block = {"role": "user", "content": summary}
    kept = [*states, *([latest] if keep_latest and latest is not None else [])]
    result: list[Message] = [*messages[: layout.body], block, *(messages[i] for i in kept),
                             *messages[pending:]]
    after = (sums[layout.body] + estimate_message_tokens(block) + sum(counts[i] for i in kept)
             + sums[-1] - sums[pending])
    if after >= sums[-1]:
        return LevelResult(
            messages,
            changed=False,
            reason="the summary is not smaller than the conversation",
            summary_calls=calls,
            cost=cost,
        )
    reason = (f"the summary was invalid {times} ({'; '.join(problems)}); used the deterministic "
              "floor" if degraded else "summarized the conversation")
    return LevelResult(result, changed=True, reason=reason, summary_calls=calls, cost=cost,
                       summary=summary, degraded=degraded)
