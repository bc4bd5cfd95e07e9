from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from nbagent.engine import ENV_PREFIX

# Shared, noisy machines: never fail a property test on how long it took.
settings.register_profile("nbagent", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("nbagent")


@pytest.fixture(autouse=True)
def _clean_nbagent_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Tests start from the defaults, whatever the developer's shell exports, and keep
    their session archives in their own temporary directory."""
    for name in list(os.environ):
        if name.startswith(ENV_PREFIX):
            monkeypatch.delenv(name)
    monkeypatch.setenv("NBAGENT_DATA_DIR", str(tmp_path / "nbagent-data"))
