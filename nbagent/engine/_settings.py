"""`EngineSettings`: the knobs the engine reads (window overrides, thresholds, the
ladder's sizes), and the environment machinery every settings model shares. The agent
room adds its own fields to make the one `Settings` users see (`nbagent.Settings`).

Environment variables are read at call time (`from_env()`), so a notebook can change
them mid-session. A bad value is never fatal: it is reported once per variable and value as
a `ConfigWarning` naming the variable, the value and what is accepted (`accepted`, read from
the field), and the default is used instead. docs/configuration.md lists every variable.
"""

from __future__ import annotations

import os
import types
import typing
import warnings
from collections.abc import Mapping
from typing import Annotated, Any, Literal, Self, cast

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
_KEEP = 16  # settings built lately, by what they were built from (all dropped when full)
_BUILT: dict[Any, EngineSettings] = {}
_VARIABLES: dict[type, dict[str, str]] = {}  # per settings class: variable → field name
# (variable, value) pairs already warned about. A setting is read from many places (the
# window, the tools, the archive's folder...), each its own line to `warnings`' own once-per-
# place filter, so one bad value used to warn five times; now it warns once per process,
# and again only when the value changes.
_WARNED: set[tuple[str, str]] = set()


class EngineSettings(BaseModel):
    """What the engine reads. Each field is read from `NBAGENT_<FIELD NAME>`."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

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
    ) -> Self:
        """Build settings from `NBAGENT_*` variables, then `overrides` (a session's own
        choices, e.g. `agent.configure(max_context_tokens=8192)`); bad values warn and fall back."""
        environ = os.environ if environ is None else environ
        fields = _VARIABLES.get(cls) or _VARIABLES.setdefault(
            cls, {ENV_PREFIX + name.upper(): name for name in cls.model_fields})
        values: dict[str, Any] = {}
        # one pass over the names, then the few that are ours: a lookup per field costs
        # os.environ a failed key each (~40 of them), and one turn reads the settings often
        for variable in [key for key in environ if key.startswith(ENV_PREFIX)]:
            name = fields.get(variable)
            raw = environ[variable] if name else None
            if name and raw is not None and (raw.strip() or name == "disable_compact"):
                values[name] = raw.strip()
        values.update(overrides or {})
        # Built once per change of what it is built from: reading the variables is cheap,
        # validating ~40 fields is not, and one turn reads the settings dozens of times.
        # The same object comes back until a variable or an override changes, so a cache
        # keyed on it (the window, the thresholds) knows when to recompute.
        try:
            key: Any = (cls, tuple(sorted(values.items())))
            hash(key)
        except TypeError:  # an override that cannot be a key: built each time
            key = None
        built = _BUILT.get(key) if key is not None else None
        if built is not None:
            return cast(Self, built)
        while True:
            try:
                made = cls(**values)
                # kept even when a value was ignored: it has warned once, which is enough
                if key is not None:
                    if len(_BUILT) >= _KEEP:
                        _BUILT.clear()  # one call, safe while another thread reads it
                    _BUILT[key] = made
                return made
            except ValidationError as error:
                # the first field refused is dropped and the rest built again (pydantic
                # reports every field, but one dropped value can change no other's check)
                name = str(error.errors()[0]["loc"][0])
                _warn_once(cls, name, values.pop(name))


def _warn_once(cls: type[BaseModel], name: str, value: Any) -> None:
    variable = f"{ENV_PREFIX}{name.upper()}"
    if (variable, repr(value)) in _WARNED:
        return
    _WARNED.add((variable, repr(value)))
    default = cls.model_fields[name].default
    warnings.warn(f"ignoring {variable}={value!r}: expected {accepted(cls, name)}; the "
                  f"default ({default!r}) is used", ConfigWarning, stacklevel=4)


def refused(cls: type[BaseModel], error: ValidationError, spelled: Mapping[str, str]) -> str:
    """A refused setting in one line: the setting as the user spelled it (`spelled`: field →
    name typed, e.g. `window` for max_context_tokens), the value, and what is accepted —
    `run_code='maybe' is not accepted: expected 'ask', 'auto' or 'off'`."""
    problem = error.errors()[0]
    if not problem["loc"]:  # a rule across fields: pydantic's words are all there is
        return str(problem["msg"])
    name = str(problem["loc"][0])
    return (f"{spelled.get(name, name)}={problem.get('input')!r} is not accepted: expected "
            f"{accepted(cls, name)}")


def accepted(cls: type[BaseModel], name: str) -> str:
    """What field `name` of `cls` accepts, in a reader's words ("a whole number above 0",
    "'ask', 'auto' or 'off'"), read from its type and constraints: a new field is described
    without a word added here."""
    field = cls.model_fields[name]
    return _type_words(field.annotation, list(field.metadata))


def _type_words(annotation: Any, constraints: list[Any]) -> str:
    origin, arguments = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is Annotated:  # PositiveInt inside an Optional: its bounds ride along
        return _type_words(arguments[0], [*arguments[1:], *constraints])
    if origin in (typing.Union, types.UnionType):  # None is "not set": no word to type
        return " or ".join(_type_words(a, constraints) for a in arguments
                           if a is not type(None))
    if origin is Literal:
        choices = [repr(a) for a in arguments]
        return " or ".join([", ".join(choices[:-1]), choices[-1]] if len(choices) > 1
                           else choices)
    if annotation is bool:
        return "true or false"
    kind = {int: "a whole number", float: "a number"}.get(annotation)
    if kind is None:
        return "text"
    bounds = [words.format(getattr(constraint, attribute))
              for constraint in constraints for attribute, words in _BOUND_WORDS
              if getattr(constraint, attribute, None) is not None]
    return " ".join([kind, " and ".join(bounds)]) if bounds else kind


# annotated_types' bounds (`Gt(0)` of PositiveInt, `Field(gt=0, le=1)`) in words
_BOUND_WORDS = (("gt", "above {}"), ("ge", "of {} or more"), ("lt", "below {}"),
                ("le", "at most {}"))

