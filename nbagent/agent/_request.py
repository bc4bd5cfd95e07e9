"""What one model request carries, built so the provider's prompt cache holds: the history
as stored (compaction is the only thing that rewrites it), then whatever changes per
request — the notebook context — at the very end, never an edit of bytes already sent.
The `CachePlan` tells the model seam where the stable prefix ends and where breakpoints
may go; `CacheMemory` remembers the previous request's latest one for each session.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from typing import Any
from weakref import WeakKeyDictionary

from ..engine._markers import is_block, is_plain_user
from ..engine._tokens import count_tools_tokens, estimate_tokens
from ._session import Session
from .providers._caching import CachePlan

Message = dict[str, Any]


def with_context(messages: list[Message], context: str | None
                 ) -> tuple[list[Message], int | None]:
    """The request with the notebook context at its end (a copy; the history never stores
    it): after the text of the latest message when that is the user's or a tool result
    (servers and models read "the last message is a tool result" as the cue to answer),
    else as a trailing user message. Returns the messages and, when the context shares the
    latest message, the offset where it starts there (before it: the cacheable part)."""
    if not context:
        return messages, None
    last = messages[-1] if messages else None
    if last is not None and isinstance(last.get("content"), str) and (
            is_plain_user(last) or last.get("role") == "tool"):
        text = str(last["content"])
        return [*messages[:-1], {**last, "content": f"{text}\n\n[{context}]"}], len(text)
    return [*messages, {"role": "user", "content": f"[{context}]"}], None


def caching_enabled(settings: Any) -> bool:
    """The `prompt_caching` setting (NBAGENT_PROMPT_CACHING; on unless set to a false value)."""
    value = getattr(settings, "prompt_caching", None)
    if value is None:
        value = os.environ.get("NBAGENT_PROMPT_CACHING", "1").strip().lower() not in (
            "0", "false", "no", "off")
    return bool(value)


MAX_REMEMBERED = 64  # earlier breakpoints remembered per session


def _chain(messages: Sequence[Message]) -> list[str]:
    """A running digest per message: entry i stands for the whole prefix through i."""
    digest, chain = "", []
    for message in messages:
        text = json.dumps(message, ensure_ascii=False, sort_keys=True, default=str)
        digest = hashlib.sha1((digest + text).encode("utf-8", "surrogatepass")).hexdigest()
        chain.append(digest)
    return chain


class CacheMemory:
    """Per session: where earlier requests put their latest breakpoint, and the digest of
    the prefix through it. The newest of those whose prefix is still byte for byte in the
    history is where the provider has a cache entry to read: after a compaction that is
    the last one before the first changed message, not the boundary far before it."""

    _by_session: WeakKeyDictionary[Session, dict[int, str]] = WeakKeyDictionary()

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
        boundary = None
        for index in range(preamble, len(messages)):
            if not is_block(messages[index]):
                break
            boundary = index
        chain = _chain(messages)
        written = cls._by_session.get(session, {})
        held = [i for i, digest in written.items()
                if i < len(chain) - 1 and chain[i] == digest]
        if messages:
            kept = {i: written[i] for i in sorted(held)[-MAX_REMEMBERED + 1:]}
            kept[len(chain) - 1] = chain[-1]
            cls._by_session[session] = kept
        return CachePlan(stable=len(messages), prefix_tokens=prefix, split=split,
                         boundary=boundary, previous=max(held, default=None),
                         key=f"nbagent-{session.id}", enabled=enabled,
                         preamble=max(preamble, 1))
