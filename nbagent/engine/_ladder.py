"""The compaction policy as one table: `LADDER` lists every level (a pure function in
`compaction/`, the keyword options it gets from the settings, and its flags), and
`levels_for` picks the rows a trigger runs. `describe_ladder()` prints it.

    auto      L1 snip → L2 memory → L3 summary (only if L2 could not run); L2 is
              skipped once the history is at or under the compact target
              (`compact_target_ratio` of the trigger), the fallbacks once it is under
              the trigger: a snip that lands just under the trigger does not end it;
              still over the trigger after them all, L4 room makes room (the floor of all
              but the latest round) before a message is ever refused
    manual    the same, always past L1
              (with no summarizer, or the breaker open for auto: L1 → floor)
    midloop   L1 snip to the mid-loop target (or the auto ladder, if configured)
    overflow  L4: drop the oldest whole rounds to fit the provider's stated limit

With the circuit breaker open the levels that call a model are left out of the
automatic ladders; the deterministic ones (L1, the floor, L4) always run. Whether a row
runs is decided by its own flags (`fallback`, `needed_over`, `terminal`), never by its
place: `_runner.run_ladder` reads them. A model level's call must also be worth its cost
(`Level.not_called`): what it would free must reach the share of the window the
summarizer's model states (`SummaryCost`), within its calls per compaction; otherwise the
floor stands in. A new level is one file in `compaction/` and one row here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Literal

from . import _figures as figures
from ._decision import Trigger
from ._level_context import LadderContext
from ._plans import (
    everything,
    folded,
    plan_floor,
    plan_memory,
    plan_overflow,
    plan_room,
    plan_snip,
    plan_summary,
)
from ._questions import SummaryCost, summary_cost
from ._settings import EngineSettings
from ._texts import NOT_WORTH, RUNNING, SPENT
from ._thresholds import Thresholds
from .compaction import (
    LevelResult,
    Summarizer,
    full_compact,
    ptl_fallback,
    session_memory_compact,
    snip_old_tools,
)
from .compaction._floor_only import floor_only
from .compaction._ptl import TokenLimits
from .compaction._room import make_room
from .compaction._summary import sections_in_words

Message = dict[str, Any]
Runs = Literal["always", "with_model", "without_model"]
Ladder = Literal["full", "micro", "overflow"]
NeededOver = Literal["trigger", "target"]


LevelFunction = Callable[..., LevelResult]  # function(messages, counts=..., **options)
Plan = Callable[[Sequence[Message], Sequence[int], LadderContext], str | None]
Folds = Callable[[Sequence[Message], Sequence[int], LadderContext], int]


def _snip(c: LadderContext) -> dict[str, Any]:
    return {"keep_recent_turns": c.settings.keep_recent_turns, "target_tokens": c.target_tokens,
            "min_chars": c.settings.snip_min_chars,
            "min_free_tokens": c.limits.scaled(c.settings.snip_batch_tokens)}


def _tail(c: LadderContext) -> dict[str, Any]:
    s, scaled = c.settings, c.limits.scaled
    return {"focus": c.focus, "tail_min_tokens": scaled(s.memory_tail_min_tokens),
            "tail_max_tokens": scaled(s.memory_tail_max_tokens),
            "tail_min_messages": s.memory_tail_min_messages,
            "min_fold_tokens": scaled(s.memory_min_fold_tokens),
            "memory_max_tokens": scaled(s.memory_max_tokens), "floor_tokens_budget": c.floor_tokens}


def _memory(c: LadderContext) -> dict[str, Any]:
    return {**_tail(c), "summarize": c.summarize, "max_input_tokens": c.summarizer_window,
            "max_calls": summary_cost(c.summarize).max_calls}


def _summary(c: LadderContext) -> dict[str, Any]:
    return {"summarize": c.summarize, "focus": c.focus, "max_input_tokens": c.summarizer_window,
            "floor_tokens_budget": c.floor_tokens,
            "max_calls": summary_cost(c.summarize).max_calls}


def _memory_folds(messages: Sequence[Message], counts: Sequence[int], c: LadderContext) -> int:
    return folded(messages, counts, c, c.summarizer_window)[1]


def _summary_folds(messages: Sequence[Message], counts: Sequence[int], c: LadderContext) -> int:
    return everything(messages, counts)[1]


def _not_worth(folds: Folds, context: LadderContext, cost: SummaryCost,
               messages: Sequence[Message], counts: Sequence[int]) -> str | None:
    """Why a call is not worth it, or None when it is: what it would fold, less the summary
    it leaves in the window, must reach `min_saving` of the window. A model that states no
    bar (a cloud model: `FREE`) is always called, as it always was."""
    if cost.min_saving <= 0:
        return None
    frees = folds(messages, counts, context) - cost.output_tokens
    bar = round(cost.min_saving * context.limits.context_window)
    if frees >= bar and frees > 0:
        return None
    return NOT_WORTH.format(tokens=figures.tokens(max(0, frees)), bar=figures.count(bar),
                            share=figures.percent(100 * cost.min_saving))


def _overflow(c: LadderContext) -> dict[str, Any]:
    return {"limits": c.overflow, "floor_tokens_budget": c.floor_tokens}


def _room(c: LadderContext) -> dict[str, Any]:
    return {"room": c.room_tokens, "focus": c.focus, "floor_tokens_budget": c.floor_tokens}


@dataclass(frozen=True)
class Rung:
    """One row of the ladder.

    `function` is the pure level, called as `function(messages, counts=..., **options(c))`.
    `ladders`: the ladders it is on ("full": auto, manual and a full mid-loop; "micro": the
    mid-loop snip; "overflow"). `runs`: always, only with a summarizer allowed, or only in
    its place. `fallback`: it runs only when no model level before it changed the history.
    `needed_over`: the stop rule — once a level before it acted, an automatic ladder skips
    it when the history is at or under the trigger ("trigger") or under the compact target
    ("target": a model fold costs a call and a cache rewrite, worth it only when the cheaper
    levels left the history near the trigger). `terminal`: the ladder stops after it.
    `stands_in`: the level that replaces a summarizer that failed (and a model level in a
    preview). `last_resort`: it runs on an automatic ladder only, after every other level
    (a terminal one too), and acts only while the history is still over the trigger (a
    message is never refused while room can be made). `plan` says in one line what it is
    about to do, or None when nothing.
    `folds`: for a model level, the tokens its summary would replace (what a call is
    weighed by: `Level.not_called`).
    """

    name: str
    function: LevelFunction
    options: Callable[[LadderContext], dict[str, Any]]
    what: str
    plan: Plan
    ladders: tuple[Ladder, ...] = ("full",)
    runs: Runs = "always"
    fallback: bool = False
    needed_over: NeededOver = "trigger"
    terminal: bool = False
    stands_in: bool = False
    folds: Folds | None = None
    last_resort: bool = False

    @property
    def calls_model(self) -> bool:
        return self.runs == "with_model"

    def bind(self, context: LadderContext) -> Level:
        """This row as a runnable `Level` for one compaction."""
        cost = summary_cost(context.summarize)
        weigh = None if not self.calls_model or self.folds is None else partial(
            _not_worth, self.folds, context, cost)
        return Level(self.name, partial(self.function, **self.options(context)),
                     calls_model=self.calls_model, fallback=self.fallback,
                     holds_breaker=self.runs == "without_model" and context.summarize is not None,
                     needed_over=self.needed_over, terminal=self.terminal,
                     last_resort=self.last_resort,
                     plan=partial(_planned, self.plan, context=context), weigh=weigh,
                     max_calls=cost.max_calls if self.calls_model else None)


@dataclass(frozen=True)
class Level:
    """One rung bound to a compaction: `run(messages, counts=...)` → a `LevelResult`.

    `calls_model`: it needs the summarizer (left out while the breaker is open).
    `fallback`: it runs only when no model level before it changed the history.
    `holds_breaker`: it stands in for the summarizer while the breaker is open, so its
    success is no evidence the summarizer works: the breaker stays as it is.
    `needed_over`: its stop rule (see `Rung`). `terminal`: nothing runs after it but a
    `last_resort` level (see `Rung`).
    `weigh` says why its call would not be worth it (None: it is); `max_calls`: the
    summarizer calls one compaction may make (see `not_called`).
    """

    name: str
    run: Callable[..., LevelResult]
    calls_model: bool = False
    fallback: bool = False
    holds_breaker: bool = False
    needed_over: NeededOver = "trigger"
    terminal: bool = False
    last_resort: bool = False
    plan: Callable[[Sequence[Message], Sequence[int]], str | None] | None = field(
        default=None, compare=False, repr=False)
    weigh: Callable[[Sequence[Message], Sequence[int]], str | None] | None = field(
        default=None, compare=False, repr=False)
    max_calls: int | None = None

    def not_called(self, messages: Sequence[Message], counts: Sequence[int], spent: int
                   ) -> str | None:
        """Why this model level's summarizer is not called now (its call would free too
        little for its cost, or the compaction already made the calls its model allows),
        or None when it is. A deterministic level is always run."""
        if not self.calls_model:
            return None
        if self.max_calls is not None and spent >= self.max_calls:
            return SPENT.format(calls=self.max_calls)
        return self.weigh(messages, counts) if self.weigh is not None else None

    def __call__(self, messages: list[Message], counts: Sequence[int] | None = None, *,
                 calls_left: int | None = None) -> LevelResult:
        """Run on `messages`; `counts` (one token count per message) saves re-counting;
        `calls_left`: the summarizer calls this compaction may still make (a model level)."""
        if self.calls_model and calls_left is not None:
            return self.run(messages, counts=counts, max_calls=calls_left)
        return self.run(messages, counts=counts)

    def describe(self, messages: Sequence[Message], counts: Sequence[int]) -> str | None:
        """What this level is about to do to `messages`, in one status line; None when its
        plan sees nothing to do."""
        return self.plan(messages, counts) if self.plan is not None else RUNNING.format(
            level=self.name)


def _planned(plan: Plan, messages: Sequence[Message], counts: Sequence[int], *,
             context: LadderContext) -> str | None:
    return plan(messages, counts, context)


LADDER: tuple[Rung, ...] = (
    Rung("L1 snip", snip_old_tools, _snip,
         "old tool results → a placeholder and a digest; superseded notebook notes cleared",
         plan_snip, ladders=("full", "micro")),
    Rung("L2 memory", session_memory_compact, _memory,
         "old rounds → the incremental session memory; the recent tail verbatim",
         plan_memory, runs="with_model", needed_over="target", folds=_memory_folds),
    Rung("L3 summary", full_compact, _summary,
         f"everything → one {sections_in_words()}-section summary (when L2 could not run)",
         plan_summary, runs="with_model", fallback=True, folds=_summary_folds),
    Rung("L3 floor", floor_only, _tail,
         "no model: old rounds → the deterministic floor (user messages, names, results)",
         plan_floor, runs="without_model", terminal=True, stands_in=True),
    Rung("L4 overflow", ptl_fallback, _overflow,
         "after \"prompt too long\": drop the oldest whole rounds to fit the stated limit",
         plan_overflow, ladders=("overflow",)),
    Rung("L4 room", make_room, _room,
         "still over the trigger after the rest: all but the latest round → the floor, then "
         "one block of it sized to the room left (never a message refused that could fit)",
         plan_room, last_resort=True),
)


def ladder_of(trigger: Trigger, settings: EngineSettings) -> Ladder:
    if trigger == "overflow":
        return "overflow"
    if trigger == "midloop" and not settings.midloop_full_compact:
        return "micro"
    return "full"


def standin(context: LadderContext, ladder: Sequence[Rung] = LADDER) -> Level:
    """The level that stands in for a summarizer that failed (the floor): the row marked
    `stands_in`, wherever it sits."""
    rung = next(r for r in ladder if r.stands_in)
    return rung.bind(LadderContext(context.settings, context.limits, None, None, context.focus))


def levels_for(
    trigger: Trigger,
    *,
    settings: EngineSettings,
    limits: Thresholds,
    summarize: Summarizer | None,
    summarizer_window: int | None = None,
    focus: str | None = None,
    breaker_open: bool = False,
    target_tokens: int | None = None,
    overflow: TokenLimits | None = None,
    room_tokens: int | None = None,
    ladder: Sequence[Rung] = LADDER,
) -> list[Level]:
    """The levels to run, in order, for `trigger` (see the module docstring)."""
    which = ladder_of(trigger, settings)
    # The breaker stops automatic summaries only: a compaction the user asked for tries
    # the summarizer again (and its success closes the breaker).
    models_allowed = summarize is not None and (trigger == "manual" or not breaker_open)
    context = LadderContext(settings, limits, summarize, summarizer_window, focus,
                            target_tokens if which == "micro" else None, overflow,
                            room_tokens)
    wanted: set[Runs] = {"always", "with_model" if models_allowed else "without_model"}
    # what the user asked for runs as asked: a last resort is for automatic ladders only
    return [r.bind(context) for r in ladder if which in r.ladders and r.runs in wanted
            and not (r.last_resort and trigger == "manual")]


def describe_ladder(ladder: Sequence[Rung] = LADDER) -> str:
    """The ladder as a table a reader (or docs/architecture.md) can print."""
    rows = ["| level | function | on | runs | skipped once it fits under | what it does |",
            "|---|---|---|---|---|---|"]
    for r in ladder:
        flags = [r.runs.replace("_", " ")]
        flags += ["fallback"] * r.fallback + ["terminal"] * r.terminal
        flags += ["stands in"] * r.stands_in + ["last resort"] * r.last_resort
        function = getattr(r.function, "__name__", repr(r.function))
        stop = "the trigger" if r.needed_over == "trigger" else "the compact target"
        rows.append(f"| {r.name} | `{function}` | {', '.join(r.ladders)} "
                    f"| {', '.join(flags)} | {stop} | {r.what} |")
    return "\n".join(rows)

