"""What one model request carries, built so the provider's prompt cache holds: the history
as stored (compaction is the only thing that rewrites it; at a provider that caches prompts
the notebook context is a note in it when it changed), never an edit of bytes already
sent. The `CachePlan` tells the model seam where breakpoints may go; `CacheMemory`
remembers earlier requests' breakpoints for each session.
"""

from __future__ import annotations

import hashlib
import json
import weakref
from collections.abc import Sequence
from itertools import accumulate
from typing import Any

from ..engine._markers import is_cleared, is_note, is_plain_user
from ..engine._tokens import count_tools_tokens, estimate_tokens
from ..engine.compaction._common import Layout
from ._session import Session
from .providers._caching import CachePlan

Message = dict[str, Any]


def context_block(context: str) -> str:
    """The notebook context as a request carries it, before the user's text."""
    return f"[{context}]\n\n"


def with_context(messages: list[Message], context: str | None) -> list[Message]:
    """The request with the notebook context in the latest plain user message, before its
    text — the question is what the model reads last (a small model named the columns the
    context lists more often so) — in a copy; the history never stores it; in a tool
    result never (the model reads it as the tool's output). For models that take no notes
    (`takes_notes`: a model of one's own, the embedded one, a local server, Gemini); at a
    provider that caches prompts the context is a note in the history instead, so no
    request edits what an earlier sent."""
    if not context:
        return messages
    for index in range(len(messages) - 1, 0, -1):
        message = messages[index]
        if is_plain_user(message) and isinstance(message.get("content"), str):
            sent = {**message, "content": context_block(context) + message["content"]}
            return [*messages[:index], sent, *messages[index + 1:]]
    return messages


MAX_REMEMBERED = 64  # earlier breakpoints remembered per session


def _chain(messages: Sequence[Message], memo: Any = None) -> list[str]:
    """A running digest per message: entry i stands for the whole prefix through i.

    With a `memo` (the session), the digests of the longest prefix made of the very
    message objects of the last call are taken from it: a message in the history is never
    edited in place (compaction and redaction make new dicts), and serialising the whole
    history again for each request made a turn's cost grow with the session."""
    before, known = _CHAINS.get(memo, ((), [])) if memo is not None else ((), [])
    same = 0
    for old, new in zip(before, messages, strict=False):
        if old is not new:
            break
        same += 1
    chain = known[:same]
    digest = chain[-1] if chain else ""
    for message in messages[same:]:
        text = json.dumps(message, ensure_ascii=False, sort_keys=True, default=str)
        digest = hashlib.sha1((digest + text).encode("utf-8", "surrogatepass")).hexdigest()
        chain.append(digest)
    if memo is not None:
        _CHAINS[memo] = (tuple(messages), chain)
    return chain


# per session: the messages of its last request and their digests (dropped with it)
_CHAINS: weakref.WeakKeyDictionary[Any, tuple[tuple[Message, ...], list[str]]] = \
    weakref.WeakKeyDictionary()


def _compacted_until(messages: Sequence[Message], layout: Layout) -> int | None:
    """The last message compaction has already rewritten: the last compaction block
    (memory, summary, notebook state) or the last cleared tool result or notebook note,
    whichever is later, but before a live note: once a newer one supersedes it, the next
    clearing changes it. Clearing goes oldest first, so the next one changes nothing up to
    here: a breakpoint on it is what the request after that compaction still reads."""
    blocks = layout.blocks_end - 1 if layout.blocks_end > layout.body else None
    start = blocks if blocks is not None else -1
    cleared = next((i for i in range(len(messages) - 1, start, -1)
                    if is_cleared(messages[i])), None)
    if cleared is None:
        return blocks
    live = next((i for i in range(start + 1, cleared) if is_note(messages[i])
                 and not is_cleared(messages[i])), None)
    boundary = cleared if live is None else live - 1
    return boundary if boundary > start else blocks


class CacheMemory:
    """Per session: where earlier requests put their latest and their compaction
    breakpoints, and the digest of the prefix through each. The newest of those whose
    prefix is still byte for byte in the history is where the provider has a cache entry
    to read: after a compaction that is the last one before the first changed message
    (typically the previous compaction's boundary), not the system prompt far before it."""

    @classmethod
    def plan(cls, session: Session, tools: list[dict[str, Any]], *, enabled: bool
             ) -> CachePlan:
        """The plan for a request whose stable part is `session.history` as it is now."""
        history = session.history
        messages = history.messages
        count = session.tracker.count_text or estimate_tokens
        tools_tokens = count_tools_tokens(tools, count) if tools else 0
        prefix = list(accumulate(history.token_counts(), initial=tools_tokens))[1:]
        layout = Layout.of(messages, rounds=False)  # its preamble and blocks: no walk
        boundary = _compacted_until(messages, layout)
        chain = _chain(messages, session)
        written = session.cache_marks
        held = [i for i, digest in written.items()
                if i < len(chain) - 1 and chain[i] == digest]
        if messages:
            kept = {i: written[i] for i in sorted(held)[-MAX_REMEMBERED + 2:]}
            if boundary is not None:
                kept[boundary] = chain[boundary]
            kept[len(chain) - 1] = chain[-1]
            session.mark_cache(kept)
        return CachePlan(stable=len(messages), prefix_tokens=prefix,
                         boundary=boundary, previous=max(held, default=None),
                         key=f"nbagent-{session.id}", enabled=enabled,
                         preamble=max(layout.body, 1))
