"""nbagent.widgets: the notebook UI (the live context meter and the chat display).

Shipped inside the wheel as `nbagent.widgets`; the source folder is `widgets/`.
The meter arrives with the notebook issue; until then this package only marks
the place, so importing it is cheap and pulls in no widget library.
"""

from __future__ import annotations

__all__: list[str] = []
