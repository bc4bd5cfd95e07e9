"""What one server's listing becomes: the definitions offered (cleaned, bounded, within
the server's share of the window), a line for each thing the user should know (a tool
left out, characters removed, a description cut, arguments unchecked), and what changed
since the listing before (new, changed and removed tools), which needs approval again.
`Catalog` keeps this for every server of an `McpServers`, and builds the question a call
puts to the user (`request`): while a change caught this turn is open, one that no
allowance answers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._approval import Approval, ApprovalRequest
from ._definitions import MAX_SERVER, Definition, definition


@dataclass
class Listing:
    """One server's listing as offered: `offered` definitions, `notes` for the user."""

    offered: list[Definition] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    left_out: int = 0  # tools not offered (unsupported, or over the server's share)

    def fingerprints(self) -> dict[str, str]:
        return {d.remote_name: d.fingerprint for d in self.offered}


def read_listing(server: str, tools: Sequence[Any]) -> Listing:
    """The definitions offered for a server's listed tools (`mcp_types.Tool`s), in order,
    until their names, descriptions and schemas reach `MAX_SERVER` characters."""
    listing = Listing()
    used = 0
    names: set[str] = set()
    over: list[str] = []
    for remote in tools:
        made = definition(remote)
        label = f"MCP server {server!r}, tool {made.name!r}"
        if made.skipped is not None:
            listing.notes.append(f"{label} is not offered: {made.skipped}")
            listing.left_out += 1
            continue
        if made.name in names:  # two names alike once their hidden characters are gone
            listing.notes.append(f"{label} is not offered: another tool of the server has "
                                 "the same name once invisible characters are removed")
            listing.left_out += 1
            continue
        if used + made.size() > MAX_SERVER:
            over.append(made.name)
            continue
        used += made.size()
        names.add(made.name)
        listing.offered.append(made)
        listing.notes.extend(f"{label}: {note}" for note in made.notes)
    if over:
        listing.left_out += len(over)
        listing.notes.append(
            f"MCP server {server!r}: {len(over)} tool(s) not offered ({', '.join(over[:5])}"
            f"{', …' if len(over) > 5 else ''}): its tools would take more than "
            f"{MAX_SERVER:,} characters of every request")
    return listing


def changes(server: str, before: Mapping[str, str],
            after: Mapping[str, str]) -> tuple[str | None, list[str]]:
    """A line saying what changed between two listings of a server (fingerprints by
    the server's tool names), or None when nothing did; and the tools new or changed."""
    added = [name for name in after if name not in before]
    removed = [name for name in before if name not in after]
    changed = [name for name in after if name in before and before[name] != after[name]]
    if not (added or removed or changed):
        return None, []
    parts = [f"{word}: {', '.join(repr(n) for n in names)}" for word, names in (
        ("new", added), ("changed", changed), ("removed", removed)) if names]
    again = " — they need your approval again" if added or changed else ""
    return f"MCP server {server!r} changed its tools ({'; '.join(parts)}){again}", added + changed


class Catalog:
    """What each server offers now, and the lines said about it (each once).

    Args:
        say: receives one line for the user.
        on_change: receives the line of each change that brought new or changed
            definitions (the owner suspends every allowance for the rest of the turn).
    """

    def __init__(self, say: Callable[[str], None],
                 on_change: Callable[[str], None] | None = None) -> None:
        self.say = say
        self.on_change = on_change
        self.version = 0  # grows whenever what is offered changes (a listing, a removal)
        self._listings: dict[str, Listing] = {}
        self._said: set[str] = set()

    def offered(self, server: str) -> list[Definition]:
        return self._listings.get(server, Listing()).offered

    def forget(self, server: str) -> None:
        if self._listings.pop(server, None) is not None:
            self.version += 1

    def count(self, server: str) -> str:
        """'N tools', with how many were left out."""
        listing = self._listings.get(server, Listing())
        left_out = f" ({listing.left_out} not offered)" if listing.left_out else ""
        return f"{len(listing.offered)} tools{left_out}"

    def take(self, server: str, tools: Sequence[Any], approval: Approval | None) -> None:
        """Keep a server's new listing: say once what the user should know about it, and
        what changed since the last one, whose approvals are then taken back."""
        before = self._listings.get(server)
        listing = read_listing(server, tools)
        self._listings[server] = listing
        if before is None or [(d.name, d.fingerprint) for d in before.offered] != [
                (d.name, d.fingerprint) for d in listing.offered]:
            self.version += 1
        for note in listing.notes:
            if note not in self._said:
                self._said.add(note)
                self.say(note)
        if before is None:
            return
        line, touched = changes(server, before.fingerprints(), listing.fingerprints())
        if line is not None:
            self.say(line)
        if line is not None and touched and self.on_change is not None:
            self.on_change(line)
        if touched and approval is not None:
            # a new or changed definition is not what the user allowed: ask again (the
            # server as a whole too, since "always for this server" meant its old tools)
            approval.revoke("mcp", server)
            for remote in touched:
                approval.revoke("mcp", server, remote)

    def request(self, server: str, tool: str, arguments: dict[str, Any],
                changed: Sequence[str] = ()) -> ApprovalRequest:
        """The question for a call: the tool as offered, its server, its arguments. With
        `changed` (the lines of the tool changes caught this turn) it has no scope, so no
        allowance answers it and no answer adds one: the user is asked, and told why."""
        offered = {d.remote_name: d for d in self.offered(server)}
        shown = offered[tool].name if tool in offered else tool
        unchecked = tool in offered and not offered[tool].checked
        source = f"MCP server {server!r}" + (", arguments unchecked" if unchecked else "")
        if changed:
            return ApprovalRequest(
                action="call the MCP tool", subject=shown,
                source=f"{source}; asked although allowed: {suspension(changed)}",
                details=arguments, scopes=())
        return ApprovalRequest(
            action="call the MCP tool", subject=shown, source=source,
            details=arguments, scopes=(("mcp", server, tool), ("mcp", server)))


def suspension(changed: Sequence[str]) -> str:
    """Why every MCP call asks for the rest of this turn, from the change lines."""
    said = "; ".join(line.split(" — ")[0] for line in changed[:3])
    more = f" (and {len(changed) - 3} more change(s))" if len(changed) > 3 else ""
    return (f"{said}{more}, during this turn, so every MCP call asks until the turn ends "
            "(a changed description may steer the model toward any server's tools)")


def allow_configured(approval: Approval, server: str, always_allow: bool | list[str]) -> None:
    """What a server's spec allows without asking (`alwaysAllow`: true, or tool names)."""
    if always_allow is True:
        approval.allow("mcp", server)
    elif always_allow:
        for tool in always_allow:
            approval.allow("mcp", server, tool)
