"""`History`: the one holder of a session's OpenAI-format chat messages.

It validates every message as it arrives (roles, content shape, tool-call
pairing), groups messages into rounds and API turns, and caches a token
estimate per message so a context check is O(1). Compaction levels do not
live here: they are pure functions over plain message lists.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from ._exceptions import HistoryError
from ._markers import is_images, is_plain_user
from ._tokens import estimate_message_tokens

Message = dict[str, Any]
ROLES = frozenset({"system", "user", "assistant", "tool"})


@dataclass(frozen=True)
class Span:
    """Messages `start` (inclusive) to `stop` (exclusive) of a history."""

    start: int
    stop: int

    def __len__(self) -> int:
        return self.stop - self.start


def _check_shape(index: int, message: Any) -> None:
    """Check one message on its own: role, content and tool-call shape."""
    if not isinstance(message, Mapping):
        raise HistoryError(index, f"expected a dict, got {type(message).__name__}")
    role = message.get("role")
    if role not in ROLES:
        raise HistoryError(index, f"unknown role {role!r} (expected one of {sorted(ROLES)})")
    content = message.get("content")
    if isinstance(content, list):
        for part_index, part in enumerate(content):
            if not isinstance(part, Mapping) or not isinstance(part.get("type"), str):
                raise HistoryError(
                    index, f"content part {part_index} is not a dict with a string 'type'"
                )
    elif content is not None and not isinstance(content, str):
        raise HistoryError(
            index,
            f"content must be a string or a list of content parts, got {type(content).__name__}",
        )
    calls = message.get("tool_calls")
    if calls is not None and role != "assistant":
        raise HistoryError(index, f"only assistant messages carry tool_calls, not {role!r}")
    if role == "assistant" and calls:
        _check_calls(index, calls)
    if role == "tool" and not isinstance(message.get("tool_call_id"), str):
        raise HistoryError(index, "a tool result needs a string 'tool_call_id'")
    if role == "assistant" and content is None and not calls:
        raise HistoryError(index, "an assistant message needs content or tool_calls")
    if role in ("user", "system") and content is None:
        raise HistoryError(index, f"a {role} message needs content")


def _check_calls(index: int, calls: Any) -> None:
    if not isinstance(calls, list):
        raise HistoryError(index, "tool_calls must be a list")
    seen: set[str] = set()
    for call in calls:
        call_id = call.get("id") if isinstance(call, Mapping) else None
        if not isinstance(call_id, str) or not call_id:
            raise HistoryError(index, "every tool call needs a non-empty string 'id'")
        if call_id in seen:
            raise HistoryError(index, f"tool call id {call_id!r} appears twice")
        seen.add(call_id)
        function = call.get("function")
        if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
            raise HistoryError(index, f"tool call {call_id!r} needs function.name")
        arguments = function.get("arguments", "")
        if not isinstance(arguments, str):
            raise HistoryError(index, f"tool call {call_id!r}: arguments must be a JSON string")
        if arguments.strip():
            try:
                json.loads(arguments)
            except json.JSONDecodeError as error:
                raise HistoryError(
                    index, f"tool call {call_id!r}: arguments are not valid JSON ({error.msg})"
                ) from None


@dataclass
class _Pairing:
    """Where tool-call pairing stands after the messages seen so far."""

    caller: int = -1  # index of the latest assistant message with tool calls
    calls: tuple[str, ...] = ()  # its call ids
    open: list[str] = field(default_factory=list)  # those not answered yet
    in_results: bool = False  # the last message was that assistant or one of its results

    def copy(self) -> _Pairing:
        return _Pairing(self.caller, self.calls, list(self.open), self.in_results)

    def feed(self, index: int, message: Mapping[str, Any]) -> None:
        role = message["role"]
        if role == "tool":
            call_id = message["tool_call_id"]
            if not self.in_results:
                raise HistoryError(
                    index, f"tool result for {call_id!r} does not follow an assistant tool call"
                )
            if call_id not in self.calls:
                raise HistoryError(
                    index,
                    f"tool result answers {call_id!r}, which the assistant message "
                    f"at index {self.caller} did not call",
                )
            if call_id not in self.open:
                raise HistoryError(index, f"tool call {call_id!r} is answered twice")
            self.open.remove(call_id)
            return
        if self.open:
            raise HistoryError(
                index,
                f"tool call(s) {', '.join(map(repr, self.open))} of the assistant message at "
                f"index {self.caller} must be answered before the next {role} message",
            )
        calls = message.get("tool_calls") if role == "assistant" else None
        if calls:
            self.caller = index
            self.calls = tuple(call["id"] for call in calls)
            self.open = list(self.calls)
            self.in_results = True
        else:
            self.in_results = False


def validate_messages(messages: Sequence[Mapping[str, Any]]) -> list[str]:
    """Check a whole message list; return the ids of calls still waiting for results.

    Raises `HistoryError` naming the first offending message.
    """
    pairing = _Pairing()
    for index, message in enumerate(messages):
        _check_shape(index, message)
        pairing.feed(index, message)
    return list(pairing.open)


class History:
    """The messages of one chat session, always valid.

    Every message is checked on arrival; a bad one raises `HistoryError` (with
    its index and the problem) and leaves the history as it was. `extend` and
    `replace` are all-or-nothing.

        history = History([{"role": "system", "content": "You are terse."}])
        history.append({"role": "user", "content": "hi"})
        history.rounds()   # [Span(start=1, stop=2)]
    """

    def __init__(
        self,
        messages: Iterable[Mapping[str, Any]] = (),
        *,
        count_message: Callable[[Mapping[str, Any]], int] = estimate_message_tokens,
    ) -> None:
        self.count_message = count_message  # one count per message, cached (exact or estimate)
        self._messages: list[Message] = []
        self._tokens: list[int] = []
        self._total = 0
        self._pairing = _Pairing()
        self._round_starts: list[int] = []
        self._turn_starts: list[int] = []
        self._call_ids: set[str] = set()
        self._images = 0  # messages of a round's figures (or their cleared text)
        self.generation = 0  # bumped whenever earlier messages are rewritten
        self.extend(messages)

    def __len__(self) -> int:
        return len(self._messages)

    def __iter__(self) -> Iterator[Message]:
        return iter(self._messages)

    def __getitem__(self, index: int) -> Message:
        return self._messages[index]

    def __repr__(self) -> str:
        return f"History({len(self)} messages, ~{self._total} tokens)"

    @property
    def messages(self) -> list[Message]:
        """A copy of the message list (the dicts themselves are shared)."""
        return list(self._messages)

    @property
    def estimated_tokens(self) -> int:
        """Sum of the cached per-message estimates (no calibration, no framing)."""
        return self._total

    def token_counts(self) -> list[int]:
        """The cached count of every message, in order (what the levels take as `counts`)."""
        return list(self._tokens)

    def message_tokens(self, index: int) -> int:
        return self._tokens[index]

    def append(self, message: Mapping[str, Any]) -> None:
        self.extend([message])

    def extend(self, messages: Iterable[Mapping[str, Any]]) -> None:
        """Append messages, all or none: the first bad one raises and nothing changes."""
        incoming = [
            dict(message) if isinstance(message, Mapping) else message for message in messages
        ]
        pairing = self._pairing.copy()
        for offset, message in enumerate(incoming):
            index = len(self._messages) + offset
            _check_shape(index, message)
            pairing.feed(index, message)
        self._pairing = pairing
        for message in incoming:
            self._add(message, self.count_message(message))

    def replace(self, messages: Sequence[Mapping[str, Any]]) -> None:
        """Swap in a rewritten message list (a compaction's result), all or nothing.

        Estimates of messages carried over unchanged (the same dict objects)
        are reused; the generation is bumped so stale real usage is not reused.
        """
        self._load(messages, self)
        self.generation += 1

    def copy_with(self, messages: Sequence[Mapping[str, Any]]) -> History:
        """A new, validated History of `messages`, reusing this one's cached estimates."""
        copy = History(count_message=self.count_message)
        copy._load(messages, self)
        return copy

    def recount(self, count_message: Callable[[Mapping[str, Any]], int]) -> None:
        """Count every message again with another counter (the model changed)."""
        self.count_message = count_message
        self._load(self._messages, History(count_message=count_message))
        self.generation += 1

    def _load(self, messages: Sequence[Mapping[str, Any]], source: History) -> None:
        incoming = list(messages)
        pairing = _Pairing()
        for index, message in enumerate(incoming):
            _check_shape(index, message)
            pairing.feed(index, message)
        known = {id(m): n for m, n in zip(source._messages, source._tokens, strict=True)}
        self._messages, self._tokens, self._total = [], [], 0
        self._round_starts, self._turn_starts = [], []
        self._call_ids, self._images = set(), 0
        self._pairing = pairing
        for message in incoming:
            message = message if isinstance(message, dict) else dict(message)
            tokens = known.get(id(message))
            self._add(message, self.count_message(message) if tokens is None else tokens)

    def _add(self, message: Message, tokens: int) -> None:
        index = len(self._messages)
        role = message["role"]
        if is_plain_user(message):
            self._round_starts.append(index)
        if self._turn_starts:
            # An API turn ends after a model reply and the tool results answering it.
            if role != "tool" and self._messages[-1]["role"] in ("assistant", "tool"):
                self._turn_starts.append(index)
        elif role != "system":
            self._turn_starts.append(index)
        if role == "user" and is_images(message):
            self._images += 1
        for call in message.get("tool_calls") or ():
            self._call_ids.add(call["id"])
        self._messages.append(message)
        self._tokens.append(tokens)
        self._total += tokens

    @property
    def has_images(self) -> bool:
        """Whether a round's figures (or their cleared text) are in it, known without a
        walk: a request to a model that reads no images clears them only then."""
        return self._images > 0

    def call_ids(self) -> AbstractSet[str]:
        """Every tool-call id the history already uses (a new call must not reuse one)."""
        return self._call_ids

    @property
    def pending_tool_calls(self) -> list[str]:
        """Ids of the latest assistant's tool calls that have no result yet."""
        return list(self._pairing.open)

    def check_ready(self) -> None:
        """Raise `HistoryError` unless every tool call is answered (before a model request)."""
        if self._pairing.open:
            raise HistoryError(
                len(self),
                f"tool call(s) {', '.join(map(repr, self._pairing.open))} of the assistant "
                f"message at index {self._pairing.caller} have no result yet",
            )

    @property
    def preamble(self) -> Span:
        """The leading messages before the first round (usually the system prompt)."""
        first = self._turn_starts[0] if self._turn_starts else len(self)
        return Span(0, first)

    def rounds(self) -> list[Span]:
        """Rounds: each starts at a plain user message (not a summary nbagent wrote)."""
        return _spans(self._round_starts, len(self))

    def api_turns(self) -> list[Span]:
        """API turns: the new input of one request, the model's reply and its tool results."""
        return _spans(self._turn_starts, len(self))


def _spans(starts: list[int], end: int) -> list[Span]:
    return [Span(start, stop) for start, stop in pairwise([*starts, end])]
