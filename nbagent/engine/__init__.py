"""The engine room's door: what a user of the engine on its own (and a test) works with —
the history and its spans, token counting and the tracker, which window a model has and the
thresholds read from it, the engine's settings, the ladder's context and what a summarizer
states of its cost, the fixed texts compaction writes into a history and how to recognise
them, tool output capped on arrival (`cap_output`, `output_cap`, `MIN_CAP_CHARS`), what left
the view, what fills the window and how a compaction's trigger is said (`TRIGGER_WORDS`);
`Unreadable`, the error a file the tools cannot read raises. The compaction levels are
`nbagent.engine.compaction`'s (public as `nbagent.compaction`); the events and exceptions
are public as `nbagent.events` and the package root. The machinery (the runner, attempts,
plans, texts) stays in its modules.
"""

from __future__ import annotations

from ._breakdown import Breakdown, context_breakdown
from ._decision import MAX_FAILURES, TRIGGER_WORDS, Decision
from ._exceptions import Unreadable
from ._history import History, Span, validate_messages
from ._level_context import LadderContext
from ._markers import (
    IMAGES_CLEARED,
    IMAGES_HEADER,
    MEMORY_HEADER,
    NOTE_CLEARED,
    NOTE_HEADER,
    PINS_HEADER,
    RESULTS_HEADING,
    SHORTENED,
    STATE_HEADER,
    SUMMARY_HEADER,
    is_cleared,
    is_images,
    is_memory,
    is_note,
    is_notebook_state,
    is_pins,
    is_plain_user,
    is_snipped,
    is_summary,
    snip_placeholder,
)
from ._output import MIN_CAP_CHARS, cap_output, output_cap
from ._questions import FREE, CostedSummarizer, SummaryCost, summary_cost
from ._settings import ENV_PREFIX, EngineSettings
from ._thresholds import (
    METER_LEVELS,
    THRESHOLD_COLUMNS,
    ContextState,
    MeterLevel,
    Thresholds,
    context_state,
    threshold_rows,
    thresholds,
)
from ._tokens import (
    IMAGE_TOKENS,
    MESSAGE_OVERHEAD,
    REPLY_PRIMING,
    count_message_tokens,
    count_tools_tokens,
    estimate_message_tokens,
    estimate_tokens,
    image_tokens,
)
from ._tracker import TRUNCATED_SHARE, TokenTracker, Truncation
from ._usage import Usage
from ._view import ViewChange, view_change
from ._window import (
    DEFAULT_WINDOW,
    SMALL_MODELS,
    WindowInfo,
    resolve_window,
    small_model_for,
    table_lookup,
)

__all__ = [
    "DEFAULT_WINDOW",
    "ENV_PREFIX",
    "FREE",
    "IMAGES_CLEARED",
    "IMAGES_HEADER",
    "IMAGE_TOKENS",
    "MAX_FAILURES",
    "MEMORY_HEADER",
    "MESSAGE_OVERHEAD",
    "METER_LEVELS",
    "MIN_CAP_CHARS",
    "NOTE_CLEARED",
    "NOTE_HEADER",
    "PINS_HEADER",
    "REPLY_PRIMING",
    "RESULTS_HEADING",
    "SHORTENED",
    "SMALL_MODELS",
    "STATE_HEADER",
    "SUMMARY_HEADER",
    "THRESHOLD_COLUMNS",
    "TRIGGER_WORDS",
    "TRUNCATED_SHARE",
    "Breakdown",
    "ContextState",
    "CostedSummarizer",
    "Decision",
    "EngineSettings",
    "History",
    "LadderContext",
    "MeterLevel",
    "Span",
    "SummaryCost",
    "Thresholds",
    "TokenTracker",
    "Truncation",
    "Unreadable",
    "Usage",
    "ViewChange",
    "WindowInfo",
    "cap_output",
    "context_breakdown",
    "context_state",
    "count_message_tokens",
    "count_tools_tokens",
    "estimate_message_tokens",
    "estimate_tokens",
    "image_tokens",
    "is_cleared",
    "is_images",
    "is_memory",
    "is_note",
    "is_notebook_state",
    "is_pins",
    "is_plain_user",
    "is_snipped",
    "is_summary",
    "output_cap",
    "resolve_window",
    "small_model_for",
    "snip_placeholder",
    "summary_cost",
    "table_lookup",
    "threshold_rows",
    "thresholds",
    "validate_messages",
    "view_change",
]
