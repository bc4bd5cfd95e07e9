"""What every compaction level shares: the result type, the summarizer seam, and
where a plain message list's preamble, compaction blocks and rounds are.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import Any, Protocol

from .._exceptions import CompactionFailed
from .._markers import is_block, is_notebook_state, is_plain_user
from .._tokens import estimate_message_tokens

Message = dict[str, Any]
INTERRUPTS = (KeyboardInterrupt, SystemExit, GeneratorExit)  # keep their meaning: re-raised


@dataclass(frozen=True)
class SummaryReply:
    """What a summarizer may return instead of a bare string: the text and its cost."""

    text: str
    cost: float | None = None


class Summarizer(Protocol):
    """Any callable model seam: takes a chat request (OpenAI-format messages), returns text."""

    def __call__(self, messages: list[Message], /) -> str | SummaryReply: ...


class LevelResult(list[Message]):
    """A level's output: the new message list, plus what happened.

    It is a plain list of messages (so levels compose as list → list) that also
    says whether it `changed` anything, `why` (or why not), and for the levels
    that call a model, how many `summary_calls` were made, their `cost` and the
    `summary` text written.
    """

    def __init__(
        self,
        messages: Sequence[Message],
        *,
        changed: bool,
        reason: str,
        summary_calls: int = 0,
        cost: float | None = None,
        summary: str | None = None,
        degraded: bool = False,
        exhausted: bool = False,
    ) -> None:
        super().__init__(messages)
        self.degraded = degraded  # it ran, but on a fallback (e.g. the deterministic floor)
        # nothing more can be folded: what is left is what every request carries and the
        # latest round (the last resort's word; over the trigger then is no failure)
        self.exhausted = exhausted
        self.changed = changed
        self.reason = reason
        self.summary_calls = summary_calls
        self.cost = cost
        self.summary = summary

    @classmethod
    def unchanged(cls, messages: Sequence[Message], reason: str) -> LevelResult:
        return cls(messages, changed=False, reason=reason)


def call_summarizer(summarize: Summarizer, request: list[Message]) -> SummaryReply:
    reply = summarize(request)
    if isinstance(reply, SummaryReply):
        return reply
    if not isinstance(reply, str):
        raise CompactionFailed(f"the summarizer returned {type(reply).__name__}, not text")
    return SummaryReply(reply)


def ask(
    summarize: Summarizer,
    request: list[Message],
    check: Callable[[str], list[str]],
    retry: str,
) -> tuple[SummaryReply, int, float | None, list[str]]:
    """One summarizer request, asked once more (saying what was wrong: `retry` with
    `{problems}`) when `check` finds problems in the reply. Returns the last reply, the
    calls spent, their cost and the problems left. A summarizer that raises anything
    (but an interrupt: `INTERRUPTS`) becomes `CompactionFailed` carrying the calls spent."""
    calls, cost = 0, None
    for attempt in (1, 2):
        try:
            reply = call_summarizer(summarize, request)
        except CompactionFailed as failure:
            raise CompactionFailed(failure.reason, summary_calls=calls + 1, cost=cost) from failure
        except INTERRUPTS:
            raise
        except BaseException as error:  # its own BaseException, a CancelledError: a failure
            raise CompactionFailed(f"the summarizer raised {type(error).__name__}: "
                                   f"{error_text(error)}", summary_calls=calls + 1,
                                   cost=cost) from error
        calls, cost = calls + 1, add_costs(cost, reply.cost)
        problems = check(reply.text)
        if not problems or attempt == 2:
            return reply, calls, cost, problems
        request = [*request, {"role": "assistant", "content": reply.text},
                   {"role": "user", "content": retry.format(problems="; ".join(problems))}]
    raise AssertionError("unreachable")


def ask_within(
    summarize: Summarizer, request: list[Message], check: Callable[[str], list[str]],
    retry: str, max_calls: int | None,
) -> tuple[SummaryReply, int, float | None, list[str]]:
    """`ask` with at most `max_calls` calls (None: its usual one retry): with one call the
    reply is checked here instead, so a reply with problems is not asked again."""
    if max_calls is None or max_calls >= 2:
        return ask(summarize, request, check, retry)
    # `ask` retries only when its check finds problems: a check that finds none makes it
    # ask once (its error handling kept); the real check runs on that one reply
    reply, calls, cost, _none = ask(summarize, request, lambda _text: [], retry)
    return reply, calls, cost, check(reply.text)


def error_text(error: BaseException) -> str:
    """An exception's text, even when its `__str__` raises."""
    try:
        return str(error)
    except Exception:
        return "(its message could not be read)"


def add_costs(*costs: float | None) -> float | None:
    known = [c for c in costs if c is not None]
    return sum(known) if known else None


def tokens(messages: Sequence[Mapping[str, Any]]) -> int:
    return sum(estimate_message_tokens(m) for m in messages)


def counts_for(messages: Sequence[Mapping[str, Any]], counts: Sequence[int] | None) -> list[int]:
    """One token count per message: the ones given (e.g. `History`'s cached estimates),
    or each message estimated once."""
    if counts is None:
        return [estimate_message_tokens(m) for m in messages]
    if len(counts) != len(messages):
        raise ValueError(f"{len(counts)} token counts for {len(messages)} messages")
    return list(counts)


def prefix_sums(counts: Sequence[int]) -> list[int]:
    """`sums[i]` is the total of `counts[:i]`, so any slice costs one subtraction."""
    return [0, *accumulate(counts)]


@dataclass(frozen=True)
class Layout:
    """Where things are in a message list.

    `preamble` (leading system messages: the system prompt, pins) ends at `body`;
    blocks (memory, summary, notebook state) run from `body` to `blocks_end`;
    `rounds` lists the start of every round (a plain user message) after that.
    """

    body: int
    blocks_end: int
    rounds: tuple[int, ...]

    @classmethod
    def of(cls, messages: Sequence[Mapping[str, Any]], *, rounds: bool = True) -> Layout:
        """The layout of `messages`; without `rounds`, only the preamble and the blocks
        (read from the front: no walk of the whole history)."""
        body = 0
        while body < len(messages) and messages[body].get("role") == "system":
            body += 1
        blocks_end = body
        while blocks_end < len(messages) and is_block(messages[blocks_end]):
            blocks_end += 1
        starts = tuple(i for i in range(blocks_end, len(messages))
                       if is_plain_user(messages[i])) if rounds else ()
        return cls(body, blocks_end, starts)


def split_blocks(
    blocks: Sequence[Message],
) -> tuple[list[Message], list[Message]]:
    """The memory and summary blocks, and the notebook-state blocks (kept last)."""
    return ([b for b in blocks if not is_notebook_state(b)],
            [b for b in blocks if is_notebook_state(b)])


def pending_start(messages: Sequence[Mapping[str, Any]]) -> int:
    """Where the trailing turn with unanswered tool calls begins (len(messages) if none)."""
    for index in range(len(messages) - 1, -1, -1):
        role = messages[index]["role"]
        if role == "assistant" and messages[index].get("tool_calls"):
            answered = {m.get("tool_call_id") for m in messages[index + 1 :]}
            calls = {call["id"] for call in messages[index]["tool_calls"]}
            return len(messages) if calls <= answered else index
        if role != "tool":
            break
    return len(messages)


def first_user_index(messages: Sequence[Mapping[str, Any]]) -> int | None:
    return next((i for i, m in enumerate(messages) if is_plain_user(m)), None)


def looks_like_error(text: str) -> bool:
    """A reply that is an error message or a refusal, not a summary."""
    head = text.strip()[:200].lower()
    return head.startswith(
        (
            "error",
            "an error",
            "traceback",
            "exception",
            "i'm sorry",
            "i am sorry",
            "sorry,",
            "i cannot",
            "i can't",
            "as an ai",
        )
    )
