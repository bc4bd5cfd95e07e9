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
from dataclasses import dataclass
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
    it): after the text of the latest message when that is the user's, else as a trailing
    user message. Returns the messages and, when the context shares the latest message,
    the offset where it starts there (what came before it is the cacheable part)."""
    if not context:
        return messages, None
    last = messages[-1] if messages else None
    if last is not None and is_plain_user(last) and isinstance(last.get("content"), str):
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


@dataclass
class _Latest:
    index: int
    digest: str


def _digest(messages: Sequence[Message], end: int) -> str:
    text = json.dumps(list(messages[:end]), ensure_ascii=False, sort_keys=True, default=str)
    return hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()


class CacheMemory:
    """Per session: the previous request's latest stable message, and whether the history
    up to it is still byte for byte what was sent (no compaction, undo or re-run since)."""

    _by_session: WeakKeyDictionary[Session, _Latest] = WeakKeyDictionary()

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
        previous = None
        remembered = cls._by_session.get(session)
        if remembered is not None and remembered.index < len(messages) - 1 \
                and _digest(messages, remembered.index + 1) == remembered.digest:
            previous = remembered.index
        if messages:
            cls._by_session[session] = _Latest(len(messages) - 1,
                                               _digest(messages, len(messages)))
        return CachePlan(stable=len(messages), prefix_tokens=prefix, split=split,
                         boundary=boundary, previous=previous, key=f"nbagent-{session.id}",
                         enabled=enabled, preamble=max(preamble, 1))
