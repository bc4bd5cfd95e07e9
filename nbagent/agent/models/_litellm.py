"""The one door to litellm: imported on first use, offline-safe. Every module that needs
litellm (the model seam, the error classifier, the tokenizers) asks here.

`LITELLM_LOCAL_MODEL_COST_MAP=True` is set before the import: otherwise litellm fetches
its price map from the network at import and stalls on a machine without it.
"""

from __future__ import annotations

import os
import warnings
from types import ModuleType
from typing import cast


def litellm() -> ModuleType:
    """Import litellm offline-safe (its bundled price map, no debug banners)."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    # litellm's own deprecation notices are not the notebook user's to act on
    warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"litellm(\.|$)")
    import litellm as module

    module.suppress_debug_info = True
    return cast(ModuleType, module)
