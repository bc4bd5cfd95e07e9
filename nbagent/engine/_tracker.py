"""`TokenTracker`: how many tokens the next request will occupy, cheaply.

Context size = the last real usage a provider reported + the counts of everything
appended since. Counts come from the model's exact tokenizer when the session has one
(`count_text`, see `nbagent.agent.models._counters`), else from the estimator; either way real usage
recalibrates them per model. A usage recorded before the history was rewritten
(compacted) is stale and never reused: the tracker falls back to its calibrated counts.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ._history import History, Message
from ._tokens import (
    REPLY_PRIMING,
    TextCounter,
    count_message_tokens,
    count_tools_tokens,
    estimate_tokens,
)
from ._usage import Usage

_MIN_CALIBRATION_TOKENS = 50  # smaller requests are too noisy to learn a ratio from
_RATIO_BOUNDS = (0.4, 3.0)  # a usage further off than this from our count is not believed
# A server that read less than this share of what we sent (and at least this many tokens
# less) cut the prompt: Ollama's older runner keeps half its context of an over-long prompt
# and says nothing, so what it reads is under half of what was sent. Tokenizers differ from
# our count by less than this (a first request, before any usage calibrated it, included);
# a cached prefix is counted in the usage (`Usage`). A cut just past the window reads about
# half: if this misses it, the plateau below catches the next request.
TRUNCATED_SHARE = 0.5
TRUNCATED_MIN_TOKENS = 256
# A server that cuts to fit its context (Ollama's newer runner, llama.cpp) reads the same
# count again however much more is sent: between two requests of one history, what it read
# grew by less than this share of what we appended (and by at least this many tokens less).
# A tokenizer counts a text well under our estimate (numbers: about half), never a quarter.
PLATEAU_SHARE = 0.25
PLATEAU_MIN_TOKENS = 16
# A server that cuts keeps at least about half of what it holds (Ollama's older runner keeps
# half, a cut to fit keeps all): a reading under this share of the most it read before is no
# cut but a usage that counts only part of the prompt (Ollama reporting only the tokens not
# in its cache, a proxy's own count).
KEEPS_AT_LEAST = 0.45


@dataclass(frozen=True)
class Truncation:
    """A response whose usage says the server read only part of the prompt.

    `how`: "share" (it read well under what was sent) or "plateau" (it read no more than
    the request before, though more was sent)."""

    sent: int  # our (calibrated) count of the request
    read: int  # the prompt tokens the server reported
    held: int = 0  # the most it reported reading at once before this request
    how: str = "share"

    @property
    def bound(self) -> int:
        """What the server has shown it holds: the most it read at once, this time or
        before. Never a count of ours, which is what may have drifted."""
        return max(self.read, self.held)

    @property
    def contradicts(self) -> bool:
        """Whether this reading contradicts what the server read before: far under the
        most it read at once, it is no cut (a cutting server keeps at least about half of
        what it holds) but a usage that counts only part of the prompt."""
        return self.held > 0 and self.read < KEEPS_AT_LEAST * self.held

    def window_bound(self, learned: int | None) -> int:
        """The window to keep within from now on: what the server has shown it holds
        (`bound`), never above a window already learned."""
        return self.bound if learned is None else min(self.bound, learned)


@dataclass(frozen=True)
class _Anchor:
    history: weakref.ref[History]
    model: str
    generation: int
    covered: int  # messages the usage covered
    estimate: int  # our raw count of that request (history part + tools)
    real: int  # what the provider said it occupied
    ratio_before: float | None  # the model's ratio before this usage calibrated it


@dataclass
class _Counts:
    """One history's per-message counts with the tracker's own counter."""

    generation: int
    messages: list[Message] = field(default_factory=list)  # kept so their ids stay valid
    counts: list[int] = field(default_factory=list)
    total: int = 0


class TokenTracker:
    """Tracks one session's context size against real provider usage.

    `count_text` is the model's exact text counter (`nbagent.agent.models._counters.counter_for`);
    without one, the history's cached estimates are used. Each message is counted once:
    every method is O(1) in the history length, plus the messages appended since the
    last call, the tools and the pending messages passed in.
    """

    def __init__(self, count_text: TextCounter | None = None) -> None:
        # bumped whenever what a count depends on besides the history and the tools
        # changes (the counter, a usage, a ratio): a count cached per history state with
        # an older version is stale (the agent's answers cache one)
        self.version = 0
        self.use_counter(count_text)

    def use_counter(self, count_text: TextCounter | None) -> None:
        """Count with another text counter from now on (the model changed): what was
        learnt from the old model's usage no longer applies."""
        self.count_text = count_text
        # One stable object, so a History can be told to count with it and share counts.
        self.count_message: Callable[[Mapping[str, Any]], int] = functools.partial(
            count_message_tokens, count_text=count_text or estimate_tokens
        )
        self._ratios: dict[str, float] = {}
        self._held: dict[str, int] = {}  # the most each model's server read at once
        self._ignored: set[str] = set()  # models whose usage counts part of a prompt
        self._anchor: _Anchor | None = None
        self.truncations = 0  # responses whose usage said the server cut the prompt
        self._tools_key: tuple[int, ...] = ()
        self._tools_tokens = 0
        self._counts: weakref.WeakKeyDictionary[History, _Counts] = weakref.WeakKeyDictionary()
        self.version += 1

    @property
    def last_usage(self) -> int | None:
        """The context tokens the provider reported for the last response, if any."""
        return self._anchor.real if self._anchor is not None else None

    def ratio(self, model: str) -> float:
        """Real tokens per counted token for `model`, learnt from usage (1.0 until then)."""
        return self._ratios.get(model, 1.0)

    def ignore_usage(self, model: str) -> None:
        """`model`'s server reports usage that counts only part of a prompt (the tokens not
        in its cache): what it taught is forgotten and its usage is not read any more —
        our count alone (the estimator, or the model's tokenizer) says what a request is."""
        self._ignored.add(model)
        self._ratios.pop(model, None)
        if self._anchor is not None and self._anchor.model == model:
            self._anchor = None
        self.version += 1

    def forget_server(self) -> None:
        """Another server now (the model changed): what the last one read at once, and
        whether its usage was read, no longer apply. Ratios stay: they are per model."""
        self._held.clear()
        self._ignored.clear()
        self.version += 1

    def held(self, model: str) -> int:
        """The most prompt tokens `model`'s server reported reading at once (0: none yet):
        a floor of its window, whatever it did with the rest of a prompt."""
        return self._held.get(model, 0)

    def message_tokens(self, history: History, index: int) -> int:
        """The count of message `index` of `history` (cached; uncalibrated)."""
        if not self._own_counts(history):
            return history.message_tokens(index)
        return self._counts_of(history).counts[index]

    def history_tokens(self, history: History) -> int:
        """The sum of the per-message counts of `history` (cached; uncalibrated)."""
        if not self._own_counts(history):
            return history.estimated_tokens
        return self._counts_of(history).total

    def _own_counts(self, history: History) -> bool:
        """Whether this tracker keeps its own counts (the history's are estimates)."""
        shared = getattr(history, "count_message", None) is self.count_message
        return self.count_text is not None and not shared

    def _counts_of(self, history: History) -> _Counts:
        cached = self._counts.get(history)
        if cached is not None and cached.generation == history.generation:
            done = len(cached.messages)
            if done <= len(history) and (not done or history[done - 1] is cached.messages[-1]):
                for index in range(done, len(history)):
                    self._add(cached, history[index], self.count_message(history[index]))
                return cached
        # Rewritten (compacted): reuse the counts of every message carried over unchanged.
        known = {
            id(message): n
            for counts in self._counts.values()
            for message, n in zip(counts.messages, counts.counts, strict=True)
        }
        fresh = _Counts(history.generation)
        for message in history:
            tokens = known.get(id(message))
            self._add(fresh, message, self.count_message(message) if tokens is None else tokens)
        self._counts[history] = fresh
        return fresh

    @staticmethod
    def _add(counts: _Counts, message: Message, tokens: int) -> None:
        counts.messages.append(message)
        counts.counts.append(tokens)
        counts.total += tokens

    def _tools_count(self, tools: Sequence[Mapping[str, Any]]) -> int:
        key = tuple(map(id, tools))
        if key != self._tools_key:
            self._tools_key = key
            self._tools_tokens = count_tools_tokens(tools, self.count_text or estimate_tokens)
        return self._tools_tokens

    def _history_count(self, history: History, covered: int) -> int:
        """The count of the first `covered` messages."""
        if not self._own_counts(history):
            after = sum(history.message_tokens(i) for i in range(covered, len(history)))
            return history.estimated_tokens - after
        counts = self._counts_of(history)
        return counts.total - sum(counts.counts[covered:])

    def record_usage(
        self,
        history: History,
        usage: Usage,
        *,
        model: str,
        tools: Sequence[Mapping[str, Any]] = (),
        covered: int | None = None,
        may_cut: bool = True,
    ) -> Truncation | None:
        """Record a response's real usage against the messages it covered.

        `covered` is how many messages of `history` were sent (default: all of
        them, i.e. call this before appending the reply). Pass only usage the
        provider reported, never a client-side estimate. A usage that disagrees with
        our own count by more than a factor of 2.5 either way is not believed.

        Returns a `Truncation` when the usage says the server did not read the whole
        prompt: it read well under what was sent (`TRUNCATED_SHARE`), or, since the last
        usage of this history, no more though more was appended (`PLATEAU_SHARE`: a cut to
        fit). Such a usage says nothing of our count and is never learnt from; a plateau
        also takes back what the usage before it taught (it was likely cut as well), and a
        cut of a request we counted under what the server has read at once proves our
        count low, so the ratio rises to that. `may_cut=False` for a server that refuses
        an over-long prompt instead of cutting it: there a low usage is our estimate's
        error, never a cut.
        """
        covered = len(history) if covered is None else covered
        self.version += 1  # the anchor or a ratio may change below
        counted = self._history_count(history, covered) + self._tools_count(tools) + REPLY_PRIMING
        real = usage.context_tokens
        if real <= 0 or model in self._ignored:
            return None
        held = self.held(model)
        self._held[model] = max(held, real)  # whatever else it did, it read this much at once
        cut = self._cut(history, model, covered, counted, real, held) if may_cut else None
        if cut is not None:
            self.truncations += 1
            self._anchor = None  # our count falls back to the ratio, never to a cut reading
            if not cut.contradicts and cut.sent < cut.bound and cut.sent > 0:
                # the server read `bound` tokens at once yet cut this request: it was larger
                self._ratios[model] = self.ratio(model) * cut.bound / cut.sent
            return cut
        observed = real / counted
        before = self._ratios.get(model)
        if counted >= _MIN_CALIBRATION_TOKENS:
            if not _RATIO_BOUNDS[0] <= observed <= _RATIO_BOUNDS[1]:
                return None
            self._ratios[model] = observed if before is None else (before + observed) / 2
        self._anchor = _Anchor(
            weakref.ref(history), model, history.generation, covered, counted, real, before
        )
        return None

    def _cut(self, history: History, model: str, covered: int, counted: int, real: int,
             held: int) -> Truncation | None:
        """The cut a usage shows, if any (see `record_usage`)."""
        if counted < _MIN_CALIBRATION_TOKENS:
            return None
        ratio = self.ratio(model)
        sent = round(ratio * counted)
        least = min(sent, counted)  # a ratio learnt on other text may be too high for this
        if real < TRUNCATED_SHARE * least and least - real >= TRUNCATED_MIN_TOKENS:
            return Truncation(sent, real, held, "share")
        anchor = self._anchor
        if anchor is None or anchor.history() is not history or anchor.model != model or \
                anchor.generation != history.generation or anchor.covered > covered:
            return None
        expected = ratio * (counted - anchor.estimate)  # what the appended part should add
        grew = real - anchor.real
        if expected < PLATEAU_MIN_TOKENS or grew >= PLATEAU_SHARE * expected or \
                expected - grew < PLATEAU_MIN_TOKENS:
            return None
        # the usage before this one read as much: it was likely cut too, so what it taught
        # goes (and this request is counted with the ratio learnt before it)
        if anchor.ratio_before is None:
            self._ratios.pop(model, None)
        else:
            self._ratios[model] = anchor.ratio_before
        return Truncation(round(self.ratio(model) * counted), real, held, "plateau")

    def count(
        self,
        history: History,
        *,
        model: str,
        tools: Sequence[Mapping[str, Any]] = (),
        pending: Sequence[Mapping[str, Any]] = (),
    ) -> int:
        """Tokens the next request would occupy: history, tool schemas and pending turn."""
        ratio = self.ratio(model)
        extra = sum(self.count_message(message) for message in pending)
        counted = self.history_tokens(history) + self._tools_count(tools) + REPLY_PRIMING
        anchor = self._anchor
        if (
            anchor is not None
            and anchor.history() is history
            and anchor.model == model
            and anchor.generation == history.generation
            and anchor.covered <= len(history)
        ):
            appended = counted - anchor.estimate
            return max(0, anchor.real + round(ratio * (appended + extra)))
        return round(ratio * (counted + extra))
