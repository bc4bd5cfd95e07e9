"""What a model object says of itself, or litellm's model map knows of it, that decides how
a turn treats it: whether its server may cut an over-long prompt silently
(`may_cut_silently`), whether it reads images (`sees_images`), and whether it is shown the
built-in tools only when a turn names one (`told_builtins`).
"""

from __future__ import annotations

import warnings
from typing import Any

from .models._llm import ChatModel, model_info
from .models._server_info import is_local_address, names_runtime
from .tools._builtin import BUILTIN_TOOLS


def told_builtins(model: ChatModel) -> ChatModel:
    """`model`, told which tools are the built-ins when it says it hides them unless a
    turn names one (`hides_builtins`: the bundled SmolLM2-135M, `models/_local_terms` says
    why): every row of `BUILTIN_TOOLS`, so a new built-in needs no second place. Other
    models are shown every tool, and are returned as they are."""
    if getattr(model, "hides_builtins", False) is True:
        model.skips = frozenset(BUILTIN_TOOLS)  # type: ignore[attr-defined]
    return model


def may_cut_silently(model: ChatModel) -> bool:
    """Whether `model`'s server may answer an over-long prompt by cutting its front (Ollama
    past its context length: 200 OK) rather than refusing it: a local runtime, a model
    litellm does not know (a server of one's own), or any model at a loopback or private
    address (a proxy that serves a smaller model under a known name), whatever window was
    stated for it. A provider litellm knows, at its own endpoint, refuses with an error
    instead, so a usage far below our count there is our estimate's error (numbers and
    tables count differently), never a reason to drop a paid-for reply and ask again. A
    model that says (`cuts_prompts`, e.g. the embedded model: its server refuses an
    over-long prompt, and shows its tools only at a turn's first request) is believed."""
    declared = getattr(model, "cuts_prompts", None)
    if isinstance(declared, bool):
        return declared
    base = getattr(model, "api_base", None)
    return names_runtime(model.name) or model_info(model.name) is None or (
        isinstance(base, str) and bool(base) and is_local_address(base))


def sees_images(model: ChatModel) -> bool:
    """Whether `model` reads images in its messages: what the model object says of itself
    (an `accepts_images` flag), else what litellm's model map says (`supports_vision`). A
    model litellm does not know (the embedded one, a server of one's own) reads none."""
    declared = getattr(model, "accepts_images", None)
    if isinstance(declared, bool):
        return declared
    info = model_info(model.name)
    return bool(info and info.get("supports_vision"))


def deprecated_local_name(name: str) -> Any:
    """`nbagent.local`'s names no longer kept (its module `__getattr__`):
    `SMALL_MODEL_SKIPS`, now every row of `BUILTIN_TOOLS` (`told_builtins`), with a
    `DeprecationWarning`."""
    if name == "SMALL_MODEL_SKIPS":
        warnings.warn("nbagent.local.SMALL_MODEL_SKIPS is deprecated: the bundled model is "
                      "shown every built-in tool (nbagent.agent.tools.BUILTIN_TOOLS) only "
                      "when a turn names it (LocalModel.hides_builtins)", DeprecationWarning,
                      stacklevel=2)
        return frozenset(BUILTIN_TOOLS)
    raise AttributeError(f"module 'nbagent.local' has no attribute {name!r}")
