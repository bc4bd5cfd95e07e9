"""The agent room: what the user configured (`Agent`, its `Settings`, its `Toolbox`, the
`DEFAULT_SYSTEM` prompt), the kernel's current agent (`current`, `new_session`, `reset`,
`set_current`, `kernel_agent`) and which conversation a notebook continues (`notebook_path`,
`notebook_key`, `linked_session`), what a turn returns and was billed (`ChatResult`,
`Billing`), the request path's parts (`with_context`, `CacheMemory`,
`may_cut_silently`, `sees_images`), the short names `configure` takes (`ALIASES`), the
model a delegated task runs on (`branch_model`), how often the model may ask for a
compaction (`EVERY_TURNS`) and the clock a question's waiting time runs on (`USER_CLOCK`).
Its folders have their own doors: `models`, `providers`, `tools`, `archive`, `mcp`. The
package root `nbagent` re-exports what a user works with.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._doors import lazy_door

if TYPE_CHECKING:
    from ._agent import Agent
    from ._asked_compaction import EVERY_TURNS
    from ._asking import USER_CLOCK
    from ._billing import Billing
    from ._branch import branch_model
    from ._configuration import ALIASES
    from ._current import current, kernel_agent, new_session, reset, set_current
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
          "._request", "._settings", "._texts", "._toolbox", "._asked_compaction", "._asking",
          "._branch", "._configuration")

__all__ = [
    "ALIASES",
    "DEFAULT_SYSTEM",
    "EVERY_TURNS",
    "USER_CLOCK",
    "Agent",
    "Billing",
    "CacheMemory",
    "ChatResult",
    "Settings",
    "Toolbox",
    "branch_model",
    "current",
    "kernel_agent",
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
