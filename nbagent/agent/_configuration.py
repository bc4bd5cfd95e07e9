"""`Configuration`: the settings an agent runs with — fixed ones, or the environment's
read at each use — and the overrides made on it (`Agent.configure`), checked before they
take effect, so a bad value changes nothing.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from ..engine._settings import refused
from ._settings import ENV_PREFIX, Settings

ALIASES = {"window": "max_context_tokens"}  # short names configure() accepts


class Configuration:
    """Fixed settings (a `Settings`), or overrides (a dict) on top of the environment's."""

    def __init__(self, settings: Settings | dict[str, Any] | None = None) -> None:
        self._fixed = settings if isinstance(settings, Settings) else None
        self.overrides: dict[str, Any] = dict(settings) if isinstance(settings, dict) else {}

    def settings(self) -> Settings:
        """The settings now."""
        if self._fixed is not None:
            if not self.overrides:
                return self._fixed
            # no environment: the fixed settings and the overrides (built once per change)
            return Settings.from_env({}, overrides={**self._fixed.model_dump(), **self.overrides})
        return Settings.from_env(overrides=self.overrides)

    def override(self, changes: dict[str, Any]) -> dict[str, Any]:
        """Take `changes` (field names or aliases) as overrides, once they are known names
        with valid values (else `ValueError`, and nothing changes); returns them by name."""
        overrides = {ALIASES.get(key, key): value for key, value in changes.items()}
        unknown = sorted(set(overrides) - set(Settings.model_fields))
        if unknown:
            raise ValueError(f"unknown setting(s) {', '.join(unknown)}; known: "
                             f"{', '.join(sorted([*Settings.model_fields, *ALIASES]))}")
        try:
            Settings(**{**self.settings().model_dump(), **overrides})
        except ValidationError as error:  # named as typed: `window`, not max_context_tokens
            spelled = {ALIASES.get(key, key): key for key in changes}
            raise ValueError(refused(Settings, error, spelled)) from None
        self.overrides.update(overrides)
        return overrides

    def differences(self) -> list[str]:
        """One line per setting that differs from the defaults."""
        current, defaults = self.settings(), Settings()
        return [f"{ENV_PREFIX}{name.upper()} = {value!r}"
                for name, value in current.model_dump().items()
                if value != getattr(defaults, name)]
