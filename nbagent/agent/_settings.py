"""The one `Settings` users see: what the engine reads and what the agent reads, composed.
Every module of the agent room takes its settings from here."""

from __future__ import annotations

from ..engine._settings import ENV_PREFIX, Settings

__all__ = ["ENV_PREFIX", "Settings"]
