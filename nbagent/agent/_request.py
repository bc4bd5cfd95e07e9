"""What one model request carries, built so the provider's prompt cache holds: the history
as stored (compaction is the only thing that rewrites it), then whatever changes per
request — the notebook context — at the very end, never an edit of bytes already sent.
The `CachePlan` tells the model seam where the stable prefix ends and where breakpoints
may go; `CacheMemory` remembers the previous request's latest one for each session.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

from ..engine._markers import is_block, is_plain_user, is_snipped
from ..engine._tokens import count_tools_tokens, estimate_tokens
from ._session import Session
from .providers._caching import CachePlan

Message = dict[str, Any]


def with_context(messages: list[Message], context: str | None, *, at_end: bool = True
                 ) -> tuple[list[Message], int | None]:
    """The request with the notebook context (a copy; the history never stores it).

    `at_end` (for providers reached through litellm, where the prompt cache counts): after
    the text of the latest message when that is the user's or a tool result (servers and
    templates read "the last message is a tool result" as the cue to answer), else as a
    trailing user message; returns the offset where it starts in the latest message (what
    precedes it is the cacheable part). Otherwise (a model of one's own, the embedded one,
    scripted ones, which read the last tool result as the tool's output): after the latest
    plain user message's text, wherever it is.
    """
    if not context:
        return messages, None
    note = f"\n\n[{context}]"
    if not at_end:
        for index in range(len(messages) - 1, 0, -1):
            message = messages[index]
            if is_plain_user(message) and isinstance(message.get("content"), str):
                sent = {**message, "content": f"{message['content']}{note}"}
                return [*messages[:index], sent, *messages[index + 1:]], None
        return messages, None
    last = messages[-1] if messages else None
    if last is not None and isinstance(last.get("content"), str) and (
            is_plain_user(last) or last.get("role") == "tool"):
        text = str(last["content"])
        return [*messages[:-1], {**last, "content": f"{text}{note}"}], len(text)
    return [*messages, {"role": "user", "content": f"[{context}]"}], None


MAX_REMEMBERED = 64  # earlier breakpoints remembered per session


def _chain(messages: Sequence[Message]) -> list[str]:
    """A running digest per message: entry i stands for the whole prefix through i."""
    digest, chain = "", []
    for message in messages:
        text = json.dumps(message, ensure_ascii=False, sort_keys=True, default=str)
        digest = hashlib.sha1((digest + text).encode("utf-8", "surrogatepass")).hexdigest()
        chain.append(digest)
    return chain


def _compacted_until(messages: Sequence[Message], preamble: int) -> int | None:
    """The last message compaction has already rewritten: the last compaction block
    (memory, summary, notebook state) or the last cleared tool result, whichever is later.
    Clearing goes oldest first, so the next one changes nothing up to here: a breakpoint
    on it is what the request after that compaction still reads."""
    boundary = None
    for index in range(preamble, len(messages)):
        if not is_block(messages[index]):
            break
        boundary = index
    for index in range(len(messages) - 1, boundary if boundary is not None else -1, -1):
        message = messages[index]
        if message.get("role") == "tool" and is_snipped(message.get("content")):
            return index
    return boundary


class CacheMemory:
    """Per session: where earlier requests put their latest and their compaction
    breakpoints, and the digest of the prefix through each. The newest of those whose
    prefix is still byte for byte in the history is where the provider has a cache entry
    to read: after a compaction that is the last one before the first changed message
    (typically the previous compaction's boundary), not the system prompt far before it."""

    @classmethod
    def plan(cls, session: Session, tools: list[dict[str, Any]], split: int | None,
             *, enabled: bool) -> CachePlan:
        """The plan for a request whose stable part is `session.history` as it is now."""
        history = session.history
        messages = history.messages
        count = session.tracker.count_text or estimate_tokens
        running = count_tools_tokens(tools, count) if tools else 0
        prefix: list[int] = []
        for index in range(len(messages)):
            running += history.message_tokens(index)
            prefix.append(running)
        preamble = 0
        while preamble < len(messages) and messages[preamble].get("role") == "system":
            preamble += 1
        boundary = _compacted_until(messages, preamble)
        chain = _chain(messages)
        written = session.cache_marks
        held = [i for i, digest in written.items()
                if i < len(chain) - 1 and chain[i] == digest]
        if messages:
            kept = {i: written[i] for i in sorted(held)[-MAX_REMEMBERED + 2:]}
            if boundary is not None:
                kept[boundary] = chain[boundary]
            kept[len(chain) - 1] = chain[-1]
            session.cache_marks = kept
        return CachePlan(stable=len(messages), prefix_tokens=prefix, split=split,
                         boundary=boundary, previous=max(held, default=None),
                         key=f"nbagent-{session.id}", enabled=enabled,
                         preamble=max(preamble, 1))
