"""The one door to litellm (`models/_litellm`): `litellm()` gives the imported module with its
debug banners off, sets the offline price map unless the user chose otherwise, and hides
litellm's own deprecation notices (only litellm's). The background import that `%load_ext`
starts is tests/notebook/test_early_import.py's (each case in a fresh interpreter)."""

from __future__ import annotations

import os
import sys
import warnings

import pytest

from nbagent.agent.models import litellm


def test_the_module_is_litellm_itself_with_its_debug_banners_off() -> None:
    module = litellm()
    assert module is sys.modules["litellm"] and module.suppress_debug_info is True
    assert callable(module.completion)


def test_the_offline_price_map_is_set_unless_the_user_chose(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LITELLM_LOCAL_MODEL_COST_MAP", raising=False)
    litellm()
    assert os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] == "True"
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "False")
    litellm()
    assert os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] == "False"


def test_only_litellms_own_deprecation_notices_are_hidden() -> None:
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        litellm()
        for module in ("litellm", "litellm.utils", "litellmish", "pandas"):
            warnings.warn_explicit(f"old in {module}", DeprecationWarning, "x.py", 1,
                                   module=module)
        warnings.warn_explicit("a user warning", UserWarning, "x.py", 1, module="litellm")
    assert [str(w.message) for w in seen] == ["old in litellmish", "old in pandas",
                                              "a user warning"]
