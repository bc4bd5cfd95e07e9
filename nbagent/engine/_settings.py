"""`Settings`: every knob nbagent reads from the environment, in one pydantic model.

Environment variables are read at call time (`Settings.from_env()`), so a
notebook can change them mid-session. A bad value is never fatal: it is
reported once as a `ConfigWarning` naming the variable and the value, and the
default is used instead. docs/configuration.md lists every variable.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    NonNegativeInt,
    PositiveInt,
    ValidationError,
    field_validator,
)

from ._exceptions import ConfigWarning

ENV_PREFIX = "NBAGENT_"


class Settings(BaseModel):
    """nbagent's configuration. Each field is read from `NBAGENT_<FIELD NAME>`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str | None = Field(None, description="Chat model, in litellm's naming.")
    compact_model: str | None = Field(
        None, description="Model that writes summaries; defaults to the chat model."
    )
    data_dir: str | None = Field(
        None, description="Where session archives go (default ~/.local/share/nbagent)."
    )
    local_model_path: str | None = Field(
        None, description="A GGUF file to run on the embedded server instead of SmolLM2-135M."
    )
    local_max_tokens: PositiveInt = Field(
        512, description="The embedded model's maximum reply length, in tokens."
    )
    read_roots: str | None = Field(
        None,
        description="Folders (separated by os.pathsep) the file tools may read besides the "
        "working directory.",
    )
    local_n_ctx: PositiveInt = Field(
        8192, description="The embedded local model's context window (its server's n_ctx)."
    )
    max_context_tokens: PositiveInt | None = Field(
        None, description="Overrides the model's context window (wins over everything)."
    )
    model_limit: PositiveInt | None = Field(
        None, description="Overrides the model's maximum output tokens (the output reserve)."
    )
    auto_compact_window: PositiveInt | None = Field(
        None, description="Caps the context window used for thresholds."
    )
    disable_compact: bool = Field(
        False, description="Any non-empty value turns automatic compaction off."
    )

    keep_recent_turns: NonNegativeInt = Field(
        8, description="Rounds whose tool results are never snipped (the newest ones)."
    )
    snip_min_chars: NonNegativeInt = Field(
        200, description="Tool results at most this long are never snipped."
    )
    snip_batch_tokens: NonNegativeInt = Field(
        10_000,
        description="Snip only when it frees at least this many tokens (at a 200K window; "
        "scaled down with the window): each snip rewrites cached history.",
    )
    compact_target_ratio: float = Field(
        0.5, gt=0, le=1, description="At the turn boundary the snip alone ends a compaction "
        "only if it leaves at most this fraction of the trigger; otherwise old turns are "
        "folded into the session memory too. Each compaction rewrites the cached prompt, so "
        "it must buy room for many turns, not a few."
    )
    memory_tail_min_tokens: PositiveInt = Field(
        10_000, description="Session memory keeps at least this much recent history verbatim."
    )
    memory_tail_max_tokens: PositiveInt = Field(
        20_000, description="...and at most this much (both at a 200K window, scaled down)."
    )
    memory_tail_min_messages: NonNegativeInt = Field(
        5, description="Session memory keeps at least this many recent text messages."
    )
    memory_min_fold_tokens: NonNegativeInt = Field(
        2_000, description="Session memory runs only with at least this much to fold in."
    )
    memory_max_tokens: PositiveInt = Field(
        6_000, description="When the memory grows past this, its later blocks are merged."
    )
    tool_output_max_chars: PositiveInt = Field(
        16_000,
        description="A tool result longer than this (at a 200K window, scaled down) is cut to "
        "its head and tail on arrival; the model can read the rest back.",
    )
    max_tool_rounds: PositiveInt = Field(
        25, description="A chat stops after this many rounds of tool calls."
    )
    max_chat_seconds: float = Field(
        600.0, gt=0, description="A chat stops after this many seconds (checked between rounds)."
    )
    summary_timeout_s: float = Field(
        120.0, gt=0, description="A summary (memory or full) not written within this many "
        "seconds fails that compaction; the history stays as it was."
    )
    tool_timeout_s: float = Field(
        300.0, gt=0, description="A tool still running after this many seconds is abandoned."
    )
    notebook_context: bool = Field(
        True, description="Send a short listing of your variables (names, types, shapes, "
        "columns) with each message, so the model knows your data without a tool call."
    )
    enable_python: bool = Field(
        False, description="Offer the model the python tool (runs code in your namespace)."
    )
    midloop_target_ratio: float = Field(
        0.5, gt=0, le=1, description="Mid-loop snip target, as a fraction of the auto trigger."
    )
    midloop_full_compact: bool = Field(
        False, description="Mid-loop, run the full compaction instead of a micro-snip."
    )

    @field_validator("disable_compact", mode="before")
    @classmethod
    def _any_non_empty(cls, value: Any) -> bool:
        return bool(value.strip()) if isinstance(value, str) else bool(value)

    @classmethod
    def from_env(
        cls,
        environ: Mapping[str, str] | None = None,
        overrides: Mapping[str, Any] | None = None,
    ) -> Settings:
        """Build settings from `NBAGENT_*` variables, then `overrides` (a session's own
        choices, e.g. from `%nbagent window=8192`); bad values warn and fall back."""
        environ = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for name in cls.model_fields:
            raw = environ.get(ENV_PREFIX + name.upper())
            if raw is not None and (raw.strip() or name == "disable_compact"):
                values[name] = raw.strip()
        values.update(overrides or {})
        while True:
            try:
                return cls(**values)
            except ValidationError as error:
                for problem in error.errors():
                    name = str(problem["loc"][0])
                    warnings.warn(
                        f"ignoring {ENV_PREFIX}{name.upper()}={values.pop(name)!r}: "
                        f"{problem['msg']}",
                        ConfigWarning,
                        stacklevel=3,
                    )
                    break

