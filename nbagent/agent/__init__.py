"""The agent room: what the user configured (`Agent`, its `Settings`, its `Toolbox`, the
`DEFAULT_SYSTEM` prompt), the kernel's current agent (`current`, `new_session`, `reset`,
`set_current`) and which conversation a notebook continues (`notebook_path`,
`notebook_key`, `linked_session`), what a turn returns and was billed (`ChatResult`,
`Billing`), and the request path's parts (`with_context`, `CacheMemory`,
`may_cut_silently`, `sees_images`). Its folders have their own doors: `models`,
`providers`, `tools`, `archive`, `mcp`. The package root `nbagent` re-exports what a user
works with.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._doors import lazy_door

if TYPE_CHECKING:
    from ._agent import Agent
    from ._billing import Billing
    from ._current import current, new_session, reset, set_current
    from ._loop import ChatResult
    from ._model_traits import may_cut_silently, sees_images
    from ._notebook_link import linked_session, notebook_key, notebook_path
    from ._request import CacheMemory, with_context
    from ._settings import Settings
    from ._texts import DEFAULT_SYSTEM
    from ._toolbox import Toolbox

# The names load on first use, not here, like every folder's door: the root `nbagent`
# enters this package first, and nothing here should run before the modules it names.
_PARTS = ("._agent", "._billing", "._current", "._loop", "._model_traits", "._notebook_link",
          "._request", "._settings", "._texts", "._toolbox")

__all__ = [
    "DEFAULT_SYSTEM",
    "Agent",
    "Billing",
    "CacheMemory",
    "ChatResult",
    "Settings",
    "Toolbox",
    "current",
    "linked_session",
    "may_cut_silently",
    "new_session",
    "notebook_key",
    "notebook_path",
    "reset",
    "sees_images",
    "set_current",
    "with_context",
]


if not TYPE_CHECKING:  # mypy reads the imports above, so a name no part has is an error
    __getattr__, __dir__ = lazy_door(globals(), _PARTS)  # see above
