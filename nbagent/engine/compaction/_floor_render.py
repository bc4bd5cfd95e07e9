"""The floor written as text: user messages, names, error lines and results under their
fixed headings, within a token budget shared by part (`render_floor_parts`); names the
notes beside it already show are not printed twice. Reading it back is `_floor`'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._markers import (
    ERRORS_HEADING,
    FOCUS_HEADING,
    NAMES_HEADING,
    RESULTS_HEADING,
    USER_MESSAGES_HEADING,
)
from .._tokens import estimate_tokens
from ._floor import Floor, name_cost, names_shown, notes_end
from ._results_kept import kept as kept_results
from ._users import fit_users

NAMES_SHARE, ERRORS_SHARE = 0.3, 0.15  # of the floor, unless the user messages leave more
RESULTS_SHARE = 0.15  # the results take up to this share more, on top of the rest


def _take(items: Sequence[str], budget: float, cost_of: Any) -> list[str]:
    # Stops at the first item that does not fit, never skipping it: the items are ranked
    # (first seen first) and the floor keeps a prefix of the ranking, so a later, shorter
    # item never takes an earlier one's place. A long item therefore ends the list; names
    # are bounded in length where they are found (`_identifiers.clean`).
    taken: list[str] = []
    used = 0
    for item in items:
        cost = cost_of(item)
        if used + cost > budget:
            break
        taken.append(item)
        used += cost
    return taken


def _error_cost(line: str) -> int:
    return estimate_tokens(line) + 2


def render_floor_parts(
    floor: Floor,
    budget: int,
    *,
    keep_first: bool = False,
    keep_last: bool = False,
    whole_first: bool = False,
    focus: str | None = None,
    shown: str = "",
) -> dict[str, str]:
    """The floor as text within about `budget` tokens, by part ("focus", "users", "names",
    "errors", "results"; empty parts left out): user messages (the oldest middle ones
    shortened first; the first and the last kept whole when asked), then names, error lines
    up to their shares (more when the user messages leave room); results, on top, up to
    `RESULTS_SHARE` of the budget (near-duplicates once; findings and computed results
    first, then the latest; printed in order).
    Names chosen that the notes beside the floor (`shown`) already show are not printed
    twice (see `names_shown`)."""
    users_cost = sum(estimate_tokens(t) + 2 for t in floor.user_messages)
    errors_all = sum(map(_error_cost, floor.error_lines))
    names = _take(floor.names, max(budget * NAMES_SHARE, budget - users_cost - errors_all),
                  name_cost)
    names_cost = sum(map(name_cost, names))
    errors = _take(floor.error_lines,
                   max(budget * ERRORS_SHARE, budget - users_cost - names_cost), _error_cost)
    errors_cost = sum(map(_error_cost, errors))
    results = kept_results(floor.results, budget * RESULTS_SHARE, _error_cost)
    users_budget = budget - names_cost - errors_cost
    users = fit_users(list(floor.user_messages), users_budget, keep_first, keep_last,
                      whole_first)
    parts: dict[str, str] = {}
    if focus:
        parts["focus"] = f"{FOCUS_HEADING} {' '.join(focus.split())[:300]}"
    if users:
        items = "\n".join("- " + text.replace("\n", "\n  ") for text in users)
        parts["users"] = f"{USER_MESSAGES_HEADING}\n{items}"
    if shown:
        visible = set(names_shown(shown[:notes_end(shown)]))
        names = [n for n in names if n not in visible]
    if names:
        parts["names"] = f"{NAMES_HEADING} {', '.join(names)}"
    if errors:
        parts["errors"] = ERRORS_HEADING + "".join(f"\n- {line}" for line in errors)
    if results:
        parts["results"] = RESULTS_HEADING + "".join(f"\n- {line}" for line in results)
    return parts


def render_floor(floor: Floor, budget: int, *, keep_first: bool = False,
                 keep_last: bool = False, whole_first: bool = False, focus: str | None = None,
                 shown: str = "") -> str:
    """`render_floor_parts`, joined into one text."""
    parts = render_floor_parts(floor, budget, keep_first=keep_first, keep_last=keep_last,
                               whole_first=whole_first, focus=focus, shown=shown)
    return "\n".join(parts.values())
