"""What a model object says of itself, or litellm's model map knows of it, that decides how
a turn treats its replies: whether its server may cut an over-long prompt silently
(`may_cut_silently`) and whether it reads images (`sees_images`).
"""

from __future__ import annotations

from .models._llm import ChatModel, model_info
from .models._server_info import is_local_address, names_runtime


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
