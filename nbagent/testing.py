"""Fakes that ship with nbagent, for your tests and ours: real objects with the
same interface as the model seam, replaying a script and recording every call.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from typing import Any

from .compaction import SummaryReply

Reply = str | SummaryReply | BaseException | Callable[[list[dict[str, Any]]], str]


class ScriptedSummarizer:
    """A summarizer that replays queued replies: text, a `SummaryReply`, an exception
    to raise, or a function of the request. Every request is recorded in `requests`.

        summarize = ScriptedSummarizer(["## 1. Primary Request and Intent ..."])
        controller = CompactionController(summarize=summarize)
        ...
        summarize.assert_consumed()
    """

    def __init__(self, replies: Iterable[Reply] = (), *, default: Reply | None = None) -> None:
        self.replies: list[Reply] = list(replies)
        self.default = default
        self.requests: list[list[dict[str, Any]]] = []

    def __call__(self, messages: list[dict[str, Any]]) -> str | SummaryReply:
        self.requests.append(copy.deepcopy(messages))
        if self.replies:
            reply = self.replies.pop(0)
        elif self.default is not None:
            reply = self.default
        else:
            raise AssertionError(f"ScriptedSummarizer: no reply left for call {len(self.requests)}")
        if isinstance(reply, BaseException):
            raise reply
        if callable(reply):
            return reply(messages)
        return reply

    @property
    def calls(self) -> int:
        return len(self.requests)

    def last_prompt(self) -> str:
        """The text of the last request's final message (what the model was asked)."""
        return str(self.requests[-1][-1]["content"])

    def assert_consumed(self) -> None:
        assert not self.replies, f"{len(self.replies)} scripted replies were never used"
