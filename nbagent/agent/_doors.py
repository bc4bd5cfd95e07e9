"""How the agent room's doors load their names: `lazy_door` gives a door (`nbagent.agent`
and each folder's `__init__`) its module-level `__getattr__` and `__dir__` (PEP 562), so
each name of its `__all__` is imported from its part on first use, not when the door is.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, MutableMapping, Sequence
from typing import Any


def lazy_door(namespace: MutableMapping[str, Any], parts: Sequence[str]
              ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The `__getattr__` and `__dir__` of the door whose globals are `namespace`: a name
    of its `__all__` is found in the first of `parts` (modules relative to the door, asked
    in order: a part that is costly to import goes last) that defines it, and kept in the
    door's globals, so Python asks `__getattr__` for it only once.

    Why lazily: the agent room's folders import each other's modules, so a door that
    imported its parts when entered would close an import circle between two folders,
    whichever is entered first (each door's comment names its circle, or its costly
    import); only the parts a name lives in are imported, when it is first used."""
    package = str(namespace["__name__"])

    def __getattr__(name: str) -> Any:
        if name in namespace["__all__"]:
            for part in parts:
                module = importlib.import_module(part, package)
                if name in vars(module):
                    value = vars(module)[name]
                    namespace[name] = value
                    return value
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted({*namespace, *namespace["__all__"]})

    return __getattr__, __dir__
