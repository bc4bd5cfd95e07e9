"""The one door to litellm: imported on first use, offline-safe. Every module that needs
litellm (the model seam, the error classifier, the tokenizers) asks here. `%load_ext`
starts the import early, in the background (`import_in_background`).

`LITELLM_LOCAL_MODEL_COST_MAP=True` is set before the import: otherwise litellm fetches
its price map from the network at import and stalls on a machine without it.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import warnings
from types import ModuleType
from typing import Any, cast

logger = logging.getLogger("nbagent")
_importing: threading.Thread | None = None
_starting = threading.Lock()


def litellm() -> ModuleType:
    """Import litellm offline-safe (its bundled price map, no debug banners)."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    # litellm's own deprecation notices are not the notebook user's to act on
    warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"litellm(\.|$)")
    import litellm as module

    module.suppress_debug_info = True
    return cast(ModuleType, module)


def litellm_params(**given: Any) -> dict[str, Any]:
    """litellm's own `litellm_params` for a call (`get_litellm_params`): what a provider's
    request transformation reads besides the messages and parameters."""
    from litellm.litellm_core_utils.get_litellm_params import get_litellm_params

    return dict(get_litellm_params(**given))


def thought_signature_separator() -> str:
    """What litellm puts between a tool call's id and a Gemini thought signature in it."""
    from litellm.litellm_core_utils.prompt_templates.factory import THOUGHT_SIGNATURE_SEPARATOR

    return str(THOUGHT_SIGNATURE_SEPARATOR)


def http_settings() -> dict[str, Any]:
    """How litellm's own HTTP clients connect (`verify`, `http2`, as httpx takes them): its
    SSL settings (`ssl_verify`, `SSL_CERT_FILE`, ...) as the one SSL context it made at
    import, and its HTTP/2 choice."""
    from litellm.llms.custom_httpx.http_handler import get_ssl_configuration, http2_enabled

    http2 = http2_enabled()
    return {"verify": get_ssl_configuration(http2=http2), "http2": http2}


def _import_quietly() -> None:
    try:
        litellm()
    except Exception:  # the chat that needs it imports it again and reports the failure
        logger.debug("litellm's background import failed", exc_info=True)


def import_in_background() -> threading.Thread | None:
    """Start litellm's import (4-9 s on a 2-core machine, more when it is busy) in a daemon
    thread and return at once, so the first chat finds it done; None when it is imported or
    under way already. Never raises: a thread that cannot start leaves the import to the chat.

    A chat that starts before the import finished needs no coordination: Python's import
    system locks each module while it initialises, so the chat's own `import litellm` waits
    for this one to finish and then gets the whole module, never a half-made one.
    """
    global _importing
    with _starting:
        if "litellm" in sys.modules or (_importing is not None and _importing.is_alive()):
            return None
        thread = threading.Thread(target=_import_quietly, name="nbagent-import-litellm",
                                  daemon=True)  # never keeps a closing kernel waiting
        try:
            thread.start()
        except RuntimeError:  # no thread to be had (a process at its limit): import later
            return None
        _importing = thread
        return thread


def import_pending() -> bool:
    """True while the background import runs: a chat starting now waits for it."""
    thread = _importing
    return thread is not None and thread.is_alive()
